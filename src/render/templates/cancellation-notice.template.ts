// The "Cancellation Notice" added to the form of a cancelled referral. It quotes the latest
// `referral.cancelled` timeline event, whose description carries who cancelled and why.
import { systemLabel } from '../../domain/labels.ts';
import type { EhrFormSource, TimelineEventView } from '../../domain/referral-view.ts';
import { html } from '../html.ts';
import { STYLE, blockField, field, heading, timestampField, type EhrTemplate } from './ehr-parts.ts';

// Timeline events are stored oldest first (contract §6), so the last match is the latest.
function latestCancellation(source: EhrFormSource): TimelineEventView | undefined {
  return source.timelineEvents.findLast((e) => e.type === 'referral.cancelled');
}

export const cancellationNotice: EhrTemplate = {
  name: 'Cancellation Notice',
  render: (source, display) => {
    const event = latestCancellation(source);
    return html`${heading('Cancellation Notice')}
      <div style="${STYLE.cancelled}">
        <p style="${STYLE.paragraph}"><strong>This referral has been cancelled.</strong></p>
        ${
          event === undefined
            ? html`<p style="${STYLE.paragraph}">The reason was not recorded.</p>`
            : html`<p style="${STYLE.paragraph}">
                  Cancelled ${timestampField('cancellation.producedAt', event.producedAt, display)} via
                  ${field('cancellation.system', systemLabel(event.system))}:
                </p>
                <blockquote style="margin: 0;">
                  ${blockField('cancellation.description', event.description)}
                </blockquote>
                ${
                  event.reason === undefined
                    ? html``
                    : html`<p style="${STYLE.paragraph}">
                        Reason: ${field('cancellation.reason', event.reason.display)} (code
                        ${field('cancellation.reasonCode', event.reason.code)})
                      </p>`
                }`
        }
      </div>`;
  },
};
