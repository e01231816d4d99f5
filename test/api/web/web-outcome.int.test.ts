// The provider's outcome on the view and print pages: the Outcome card (the outcome's words, the
// consult summary as written, who completed the referral and when, its documents with their download
// links on the view page, and the acknowledgement once there is one), and the sender acknowledging it
// from the view page: a plain form post with the session's token, through the same command as the
// API, refused with a page that says why when the outcome was acknowledged already, when the page is
// the provider's, or when there is no outcome yet.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionCodec } from '../../../src/api/web/session.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { CATALOG, PAGES, TEXT, pdf } from '../../support/fixtures/attachment-files.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf, senderView } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  acknowledgeOutcome,
  apiAttach,
  expectSecurityHeaders,
  filesOf,
  getPage,
  linksOf,
  outcomeCardOf,
  redeem,
  upsertLink,
  type WebSession,
} from '../../support/web.ts';

const SESSION_SECRET = 'outcome-pages-session-secret-0123456789';
const LETTER = pdf(CATALOG, PAGES);
/** Written as a clinician would, with markup that must stay text and line breaks that must stay. */
const SUMMARY =
  'Gastroscopy: normal <b>mucosa</b>, no ulcer.\n  H. pylori negative.\n\nContinue omeprazole for 4 weeks; no follow-up needed.';
/** A time as the pages write it, in the default display zone. */
const LOCAL_TIME = /^[A-Z][a-z]{2} \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT$/;

const h1Of = (body: string) => cheerio.load(body)('h1').first().text().trim();
const textOf = (body: string) => cheerio.load(body)('main').text().replace(/\s+/g, ' ');

interface Completed {
  readonly id: string;
  /** The sender's file, added to the draft: not part of the outcome. */
  readonly senderFile: string;
  /** The provider's consultation letter, part of the outcome. */
  readonly letter: string;
  /** Another file of the provider's, not part of the outcome. */
  readonly providerNote: string;
}

describe.each(APP_ENGINES)('the outcome on the web pages, on %s', (engine) => {
  let t: TestApp;
  const codec = createSessionCodec(SESSION_SECRET);
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { SESSION_SECRET } });
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (who: typeof t.sender, id: string, op: string, body: Record<string, unknown> = {}) =>
    call(t, who, 'POST', `/api/v1/referrals/${id}/${op}`, body);

  /** A referral the provider completed with a summary and its consultation letter. */
  async function completedReferral(): Promise<Completed> {
    const { id } = await createDraft(t);
    const senderFile = await apiAttach(t, t.sender, id, { name: 'ecg-report.txt', bytes: TEXT });
    await post(t.sender, id, 'submit');
    await post(t.provider, id, 'accept');
    const letter = await apiAttach(t, t.provider, id, { name: 'consult-letter.pdf', bytes: LETTER });
    const providerNote = await apiAttach(t, t.provider, id, { name: 'triage-note.txt', bytes: TEXT });
    await post(t.provider, id, 'complete', {
      outcomeCode: 'seen-discharged',
      summary: SUMMARY,
      attachmentIds: [letter],
      completedByName: 'Dr Wong Mei Ling',
    });
    return { id, senderFile, letter, providerNote };
  }

  /** The CSRF token of a session, as its page would carry it if it had a form. */
  function tokenOfSession(session: WebSession): string {
    const value = decodeURIComponent(session.cookie.slice(session.cookie.indexOf('=') + 1));
    const opened = codec.open(value, new Date());
    expect(opened, 'the session in the cookie').toBeDefined();
    return codec.csrfToken(opened!);
  }

  it('shows the sender the outcome, its documents to download, and the button to acknowledge it', async () => {
    const referral = await completedReferral();
    const links = await linksOf(t, referral.id);
    // A completed referral gives the sender no form: the view page is where it reads the outcome.
    expect(Object.keys(links).sort()).toEqual(['print', 'view']);
    const view = await redeem(t, links.view!);
    expect(view.location).toBe(`/view/${referral.id}`);
    const page = await getPage(t, view);
    expect(page.statusCode).toBe(200);
    expectSecurityHeaders(page);

    const card = outcomeCardOf(page.body)!;
    expect(card.rows).toMatchObject({
      Outcome: 'Seen and discharged to the referring clinic',
      'Completed by': 'Dr Wong Mei Ling (Central General Hospital)',
      Acknowledged: 'Not yet',
    });
    expect(card.rows.Completed).toMatch(LOCAL_TIME);
    expect(card.rows).not.toHaveProperty('Acknowledged by');
    // The summary is text, as written: its markup is not markup, its line breaks are kept.
    expect(card.summary).toBe(SUMMARY);
    expect(cheerio.load(page.body)('.outcome-card b')).toHaveLength(0);
    expect(page.body).not.toContain('<b>mucosa');

    // The outcome's documents are the provider's letter alone, with its download link.
    expect(card.documents).toEqual([
      expect.objectContaining({
        id: referral.letter,
        name: 'consult-letter.pdf',
        state: 'Available (not scanned)',
        href: `/view/${referral.id}/attachments/${referral.letter}`,
      }),
    ]);
    expect(card.documents[0]!.details).toMatch(/ SGT by Central General Hospital\.$/);
    const download = await getPage(t, view, card.documents[0]!.href);
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(LETTER)).toBe(true);
    // The Files card still lists every file of the referral.
    expect(filesOf(page.body, '.files-card').map((f) => f.id)).toEqual([
      referral.senderFile,
      referral.letter,
      referral.providerNote,
    ]);

    expect(card.acknowledgeAction).toBe(`/view/${referral.id}/acknowledge-outcome`);
    expect(card.acknowledgeButton).toBe('Acknowledge outcome');
    // The outcome comes before the document: it is what the sender must act on.
    const $ = cheerio.load(page.body);
    expect($('main > .outcome-card + article.document')).toHaveLength(1);
    // A success notice in the address alone claims nothing.
    const claimed = await getPage(t, view, `/view/${referral.id}?acknowledged=1`);
    expect(cheerio.load(claimed.body)('.banner')).toHaveLength(0);

    // On paper: the same card, without links or a button.
    const print = await getPage(t, await redeem(t, links.print!));
    expect(print.statusCode).toBe(200);
    const printed = outcomeCardOf(print.body)!;
    expect(printed.rows).toEqual(card.rows);
    expect(printed.summary).toBe(SUMMARY);
    expect(printed.documents).toEqual([{ ...card.documents[0]!, href: undefined }]);
    expect(printed.acknowledgeAction).toBeUndefined();
  });

  it('shows in the document exactly the EHR form, its files and its outcome included', async () => {
    const referral = await completedReferral();
    const query = new URLSearchParams({
      ...t.sender.institution,
      requesterIdentifier: WEB_REQUESTER,
      additionalField: 'ehrForm',
    });
    const api = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${referral.id}?${query.toString()}`,
    });
    expect(api.statusCode, api.body).toBe(200);
    const ehr = cheerio.load(api.json<{ ehrForm: string }>().ehrForm);
    const fieldsOf = ($: cheerio.CheerioAPI, root: string) =>
      $(`${root} [data-field]`)
        .toArray()
        .map((el) => [$(el).attr('data-field'), $(el).text()]);
    const expected = fieldsOf(ehr, 'main');
    // The form lists the referral's files, and the outcome's documents by their number and name.
    expect(expected).toContainEqual(['attachment.fileName', 'consult-letter.pdf']);
    const links = await linksOf(t, referral.id);
    for (const purpose of ['view', 'print'] as const) {
      const page = await getPage(t, await redeem(t, links[purpose]!));
      expect(fieldsOf(cheerio.load(page.body), 'article.document')).toEqual(expected);
    }
  });

  it('acknowledges the outcome from the view page, and then shows who did and when', async () => {
    const { id } = await completedReferral();
    const view = await redeem(t, (await linksOf(t, id)).view!);
    const token = cheerio
      .load((await getPage(t, view)).body)('form.outcome__acknowledge input[name=_csrf]')
      .val();

    const res = await acknowledgeOutcome(t, view);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe(`/view/${id}?acknowledged=1`);
    const audit = await auditRowsOf(t, res);
    expect(audit.find((r) => r.action === 'referral.acknowledge-outcome')).toMatchObject({
      api_key_id: await apiKeyIdOf(t, t.sender),
      system: 'Manual',
      requester_identifier: WEB_REQUESTER,
      outcome: 'success',
      referral_ids: [id],
    });

    const page = await getPage(t, view, String(res.headers.location));
    expect(page.statusCode).toBe(200);
    const $ = cheerio.load(page.body);
    expect($('.banner .banner__title').text()).toBe('Outcome acknowledged');
    const card = outcomeCardOf(page.body)!;
    expect(card.rows['Acknowledged by']).toBe(`${WEB_REQUESTER} (Bukit Timah Family Clinic)`);
    expect(card.rows.Acknowledged).toMatch(LOCAL_TIME);
    expect(card.acknowledgeAction).toBeUndefined();

    const api = await senderView(t, id);
    expect(api).toMatchObject({
      status: 'outcome-acknowledged',
      outcome: { acknowledgedByName: WEB_REQUESTER },
    });
    const events = api.timelineEvents as { type: string; system: string; description: string }[];
    expect(events.at(-1)).toMatchObject({
      type: 'referral.outcome-acknowledged',
      system: 'Manual',
      description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) acknowledged the outcome of the referral.`,
    });

    // Pressed again from a page drawn before (another tab): a page saying so, and nothing changes.
    const again = await acknowledgeOutcome(t, view, {
      action: `/view/${id}/acknowledge-outcome`,
      csrf: String(token),
    });
    expect(again.statusCode).toBe(409);
    expectSecurityHeaders(again);
    expect(again.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(h1Of(again.body)).toBe('This outcome has been acknowledged already');
    expect(textOf(again.body)).toContain(`${WEB_REQUESTER} (Bukit Timah Family Clinic) acknowledged it on`);
    expect(textOf(again.body)).toMatch(/ SGT\./);
    expect((await senderView(t, id)).timelineEvents).toHaveLength(events.length);

    // The provider's view page shows the acknowledgement too.
    const provider = await getPage(t, await redeem(t, (await linksOf(t, id, t.provider)).view!));
    expect(outcomeCardOf(provider.body)!.rows).toMatchObject({
      'Acknowledged by': `${WEB_REQUESTER} (Bukit Timah Family Clinic)`,
      Acknowledged: card.rows.Acknowledged,
    });
  });

  it('shows an outcome acknowledged through the API by the name the clinic system gave', async () => {
    const { id } = await completedReferral();
    await post(t.sender, id, 'acknowledge-outcome', { acknowledgedByName: 'Dr Lim Wei Ling' });
    const card = outcomeCardOf((await getPage(t, await redeem(t, (await linksOf(t, id)).view!))).body)!;
    expect(card.rows['Acknowledged by']).toBe('Dr Lim Wei Ling (Bukit Timah Family Clinic)');
    expect(card.acknowledgeAction).toBeUndefined();
  });

  it('offers the provider no button, and answers its forged post with a page', async () => {
    const { id } = await completedReferral();
    const view = await redeem(t, (await linksOf(t, id, t.provider)).view!);
    const page = await getPage(t, view);
    const card = outcomeCardOf(page.body)!;
    expect(card.rows.Acknowledged).toBe('Not yet');
    expect(card.acknowledgeAction).toBeUndefined();
    expect(card.documents[0]!.href).toBe(`/view/${id}/attachments/${card.documents[0]!.id}`);

    const forged = await acknowledgeOutcome(t, view, {
      action: `/view/${id}/acknowledge-outcome`,
      csrf: tokenOfSession(view),
    });
    expect(forged.statusCode).toBe(403);
    expectSecurityHeaders(forged);
    expect(h1Of(forged.body)).toBe('Only the referring clinic acknowledges the outcome');
    expect((await senderView(t, id)).status).toBe('completed');
  });

  it('refuses a post without the session’s token, from another site, or from the print page', async () => {
    const { id } = await completedReferral();
    const links = await linksOf(t, id);
    const view = await redeem(t, links.view!);
    const other = await redeem(t, (await linksOf(t, (await completedReferral()).id)).view!);
    const posts: { csrf?: string; headers?: Record<string, string> }[] = [
      { csrf: '' },
      { csrf: 'A'.repeat(43) },
      { csrf: tokenOfSession(other) },
      { headers: { origin: 'https://evil.example' } },
      { headers: { 'sec-fetch-site': 'cross-site' } },
    ];
    for (const options of posts) {
      const res = await acknowledgeOutcome(t, view, options);
      expect(res.statusCode, JSON.stringify(options)).toBe(403);
      expect(h1Of(res.body)).toBe('This form could not be accepted');
    }
    // The print page's session acknowledges nothing: paper has no buttons.
    const print = await redeem(t, links.print!);
    const fromPrint = await acknowledgeOutcome(t, print, {
      action: `/view/${id}/acknowledge-outcome`,
      csrf: tokenOfSession(print),
    });
    expect(fromPrint.statusCode).toBe(403);
    expect(h1Of(fromPrint.body)).toBe('Your session for this referral has ended');
    expect((await senderView(t, id)).status).toBe('completed');
  });

  it('shows no card before the provider completes, and says there is nothing to acknowledge yet', async () => {
    const referral = await referralIn(t, 'scheduled');
    const view = await redeem(t, (await linksOf(t, referral.id)).view!);
    const page = await getPage(t, view);
    expect(page.statusCode).toBe(200);
    expect(outcomeCardOf(page.body)).toBeUndefined();
    const forged = await acknowledgeOutcome(t, view, {
      action: `/view/${referral.id}/acknowledge-outcome`,
      csrf: tokenOfSession(view),
    });
    expect(forged.statusCode).toBe(409);
    expect(h1Of(forged.body)).toBe('There is no outcome to acknowledge yet');
    expect(textOf(forged.body)).toContain('Its status is now: Appointment scheduled.');
    expect((await senderView(t, referral.id)).status).toBe('scheduled');
  });

  it('shows an outcome without a summary or documents as such', async () => {
    const referral = await referralIn(t, 'accepted');
    await post(t.provider, referral.id, 'complete', { outcomeCode: 'did-not-attend' });
    const card = outcomeCardOf(
      (await getPage(t, await redeem(t, (await linksOf(t, referral.id)).view!))).body,
    )!;
    expect(card.rows).toMatchObject({
      Outcome: 'Patient did not attend',
      'Consult summary': 'No summary was written.',
      // No name given: the provider institution completed it.
      'Completed by': 'Central General Hospital',
    });
    expect(card.summary).toBeUndefined();
    expect(card.documents).toEqual([]);
    expect(card.acknowledgeButton).toBe('Acknowledge outcome');
  });

  it('sends a form opened before the provider completed to the outcome', async () => {
    const link = await upsertLink(t);
    const form = await redeem(t, link);
    await post(t.sender, link.referralId, 'submit');
    await post(t.provider, link.referralId, 'accept');
    await post(t.provider, link.referralId, 'complete', {
      outcomeCode: 'seen-follow-up',
      summary: 'Review in 6 weeks.',
    });
    const page = await getPage(t, form);
    expect(page.statusCode).toBe(409);
    expect(textOf(page.body)).toContain('Its status is now: Completed: read and acknowledge the outcome.');
    expect(textOf(page.body)).toContain(
      'The provider has completed it. Open the referral from your clinic system to read the outcome and acknowledge it.',
    );
  });
});
