// Where a command writes what it prints: the terminal, or, for a command the running embedded refhub
// runs on the operator's behalf (composition/control-socket.ts), the answer it sends back to `refhub`.
export type Output = (text: string) => void;

export const toStdout: Output = (text) => {
  process.stdout.write(text);
};
