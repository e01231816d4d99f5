#!/bin/sh
# Makes the sandbox EHR's TLS material for the compose staging stack, once: a private CA (ca.pem), and a
# certificate (sandbox-ehr.pem) with its key (sandbox-ehr.key) for the names the stack reaches the
# sandbox by: `sandbox-ehr` on the compose network, and localhost / 127.0.0.1 for its health check and
# for the published port. The CA's own key is discarded as soon as it has signed, so nothing can mint
# another certificate that refhub would trust. A second run keeps what the first one made.
#
#   sh deploy/sandbox-ehr-tls.sh DIR
#
# KEY_OWNER (default 1000:1000, the refhub image's `node` user) owns the private key, readable by it
# alone. Needs openssl 1.1.1 or later.
set -eu

dir=${1:?usage: sandbox-ehr-tls.sh DIR}
owner=${KEY_OWNER:-1000:1000}
days=825

if [ -s "$dir/ca.pem" ] && [ -s "$dir/sandbox-ehr.pem" ] && [ -s "$dir/sandbox-ehr.key" ]; then
  echo "sandbox EHR certificate already in $dir"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj '/CN=refhub staging CA' \
  -addext 'basicConstraints=critical,CA:TRUE,pathlen:0' \
  -addext 'keyUsage=critical,keyCertSign,cRLSign' \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj '/CN=sandbox-ehr' -keyout "$work/sandbox-ehr.key" -out "$work/sandbox-ehr.csr" 2>/dev/null
cat >"$work/extensions" <<'EXTENSIONS'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:sandbox-ehr,DNS:localhost,IP:127.0.0.1
EXTENSIONS
openssl x509 -req -in "$work/sandbox-ehr.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
  -set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$work/extensions" \
  -out "$work/sandbox-ehr.pem" 2>/dev/null

# The CA last: its presence is what marks the set complete.
install -m 600 -o "${owner%%:*}" -g "${owner##*:}" "$work/sandbox-ehr.key" "$dir/sandbox-ehr.key"
install -m 644 "$work/sandbox-ehr.pem" "$dir/sandbox-ehr.pem"
install -m 644 "$work/ca.pem" "$dir/ca.pem"
echo "sandbox EHR certificate made in $dir (valid $days days)"
