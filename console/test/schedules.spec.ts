/**
 * Schedule and event triggers in a real browser against a real `npm start` (its embedded Temporal
 * runs the Schedules), by role and accessible name: an interval schedule made through the form
 * with "Trigger kind" = Schedule, published, its next runs shown; "Pause schedule" (Paused),
 * "Resume schedule" (Active), "Run now" (a run link that opens the run), "Backfill" of a past range
 * (the dialog counts the range's times; the answer's started and skipped); a cron's field error
 * at the field; an event automation saved with the checked types; the keyboard-only path of Run
 * now; the page at 390 px; axe on each page (no serious or critical violation).
 */
import { expect, test, type Page } from '@playwright/test';
import { assertAccessible, bearer, screenshot, signIn } from './session';

test.describe.configure({ mode: 'serial' });

const shared: { scheduleId?: string } = {};

async function newAutomation(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Automations', exact: true }).click();
  await page.getByRole('button', { name: 'New automation' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'New automation' })).toBeVisible();
  await page.getByLabel('Display name').fill(name);
}

/** "2026-12-03T19:05" in the browser's time zone, as a datetime-local input takes it. */
function localInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

test('a schedule made in the form: a bad cron is named at its field; an interval saved, published, next runs shown', async ({
  page,
  request,
}) => {
  await signIn(page);
  await newAutomation(page, 'Nightly sweep');
  await page.getByLabel('Trigger kind').selectOption({ label: 'Schedule' });
  // A schedule has no auth method, and no flow control of its own.
  await expect(page.getByLabel('Auth method')).toHaveCount(0);
  await expect(page.getByLabel('Filter')).toHaveCount(0);
  await expect(page.getByText('The next five times appear here after saving and publishing')).toBeVisible();
  await expect(page.getByLabel('Time zone')).toHaveValue('UTC');
  const zones = await page.getByLabel('Time zone').getAttribute('list');
  expect(await page.locator(`datalist[id="${zones}"] option`).count()).toBeGreaterThan(100);
  await expect(page.getByLabel('Overlap').locator('option')).toHaveCount(6);

  await page.getByLabel('Cron', { exact: true }).fill('61 * * *');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByLabel('Cron', { exact: true })).toHaveAccessibleDescription(/trigger\.schedule\.cron/);
  await expect(page.getByLabel('Cron', { exact: true })).toHaveAttribute('aria-invalid', 'true');
  await assertAccessible(page, 'schedule form with a field error');

  await page.getByLabel('Schedule by').selectOption('interval');
  await page.getByLabel('Interval').fill('60s');
  await page.getByLabel('Offset').fill('0s');
  await page.getByLabel('Time zone').fill('Europe/Berlin');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Nightly sweep' })).toBeVisible();
  shared.scheduleId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  const listener = page.getByRole('region', { name: 'Listener' });
  await expect(listener).toContainText('Trigger: schedule (no listener)');

  await listener.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(listener.getByText(/Published \(version 1\)/)).toBeVisible();
  const panel = page.getByRole('region', { name: 'Schedule' });
  await expect(panel.getByText('Active', { exact: true })).toBeVisible();
  await expect(panel.getByRole('list', { name: 'Next runs' }).getByRole('listitem')).toHaveCount(5);
  // The form's preview: the API's next times in the chosen zone (Europe/Berlin) and the browser's.
  const preview = page.getByRole('table', { name: 'The next five times of the saved schedule' });
  await expect(preview.getByRole('row')).toHaveCount(6);
  await expect(preview.getByRole('columnheader', { name: 'In Europe/Berlin' })).toBeVisible();

  const api = await (
    await request.get(`/api/v1/automations/${shared.scheduleId}`, { headers: await bearer(request) })
  ).json();
  expect(api.automation.trigger.schedule).toMatchObject({ interval: '60s', timezone: 'Europe/Berlin', enabled: true });
  const first = api.automation.schedule.nextRuns[0] as string;
  await expect(panel.locator(`time[datetime="${first}"]`)).toBeVisible();
  await assertAccessible(page, 'a published schedule automation');
  await screenshot(page, 'schedule');
});

test('Pause schedule, then Resume schedule: each asks first, the state follows, the focus stays on the button', async ({
  page,
  request,
}) => {
  await signIn(page);
  await page.goto(`/console/automations/${encodeURIComponent(shared.scheduleId!)}`);
  const panel = page.getByRole('region', { name: 'Schedule' });
  await expect(panel.getByText('Active', { exact: true })).toBeVisible();

  await panel.getByRole('button', { name: 'Pause schedule' }).click();
  const dialog = page.getByRole('dialog', { name: 'Pause this schedule?' });
  await expect(dialog).toBeVisible();
  await assertAccessible(page, 'the pause dialog');
  await page.keyboard.press('Escape');
  await expect(dialog).toHaveCount(0);
  await expect(panel.getByRole('button', { name: 'Pause schedule' })).toBeFocused();
  await expect(panel.getByText('Active', { exact: true })).toBeVisible();

  await panel.getByRole('button', { name: 'Pause schedule' }).click();
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(panel.getByText('Paused', { exact: true })).toBeVisible();
  await expect(panel.getByText('None while paused.')).toBeVisible();
  await expect(panel.getByRole('status').filter({ hasText: 'Schedule paused' })).toBeVisible();
  await expect(panel.getByRole('button', { name: 'Resume schedule' })).toBeFocused();
  const headers = await bearer(request);
  const paused = await (await request.get(`/api/v1/automations/${shared.scheduleId}`, { headers })).json();
  expect(paused.automation.trigger.schedule.enabled).toBe(false);
  expect(paused.automation.schedule.paused).toBe(true);
  await assertAccessible(page, 'a paused schedule');

  await panel.getByRole('button', { name: 'Resume schedule' }).click();
  await page.getByRole('dialog', { name: 'Resume this schedule?' }).getByRole('button', { name: 'Confirm' }).click();
  await expect(panel.getByText('Active', { exact: true })).toBeVisible();
  await expect(panel.getByRole('list', { name: 'Next runs' }).getByRole('listitem')).toHaveCount(5);
  await expect(panel.getByRole('button', { name: 'Pause schedule' })).toBeFocused();
  const resumed = await (await request.get(`/api/v1/automations/${shared.scheduleId}`, { headers })).json();
  expect(resumed.automation.schedule.paused).toBe(false);
});

test('Run now with the keyboard alone: a polite message with a run link, which opens the run', async ({ page }) => {
  await signIn(page);
  await page.goto(`/console/automations/${encodeURIComponent(shared.scheduleId!)}`);
  const panel = page.getByRole('region', { name: 'Schedule' });
  const runNow = panel.getByRole('button', { name: 'Run now' });
  await expect(runNow).toBeVisible();
  // Tab from the page's heading to Run now, then Enter; Tab on reaches the run link.
  await page.getByRole('heading', { level: 1 }).focus();
  for (let i = 0; i < 40 && !(await runNow.evaluate((el) => el === document.activeElement)); i++)
    await page.keyboard.press('Tab');
  await expect(runNow).toBeFocused();
  await page.keyboard.press('Enter');
  const link = panel.getByRole('link', { name: /^Open run / });
  await expect(link).toBeVisible();
  await expect(panel.getByRole('status').filter({ hasText: 'Run started.' })).toHaveAttribute('aria-live', 'polite');
  await expect(runNow).toBeFocused();
  // Backfill, then the run link under the buttons.
  await page.keyboard.press('Tab');
  await expect(panel.getByRole('button', { name: 'Backfill' })).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(link).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { level: 1, name: /^Run / })).toBeVisible();
  await expect(page.getByText('COMPLETED').first()).toBeVisible();
  await assertAccessible(page, 'the run of Run now');
});

test('Backfill a past range: the dialog counts its times; a range too long is the API’s 400 in the dialog; then started and skipped', async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/console/automations/${encodeURIComponent(shared.scheduleId!)}`);
  const panel = page.getByRole('region', { name: 'Schedule' });
  await panel.getByRole('button', { name: 'Backfill' }).click();
  const dialog = page.getByRole('dialog', { name: 'Backfill a past range?' });
  await expect(dialog).toBeVisible();
  await expect(dialog.getByLabel('Start')).toBeFocused();

  // Two days of a 60 s interval: 2,880 times, more than a backfill may run; the API refuses naming endAt.
  // The range ends 10 minutes ago: before the schedule was made, so none of its times has run yet.
  const end = new Date();
  end.setSeconds(0, 0);
  end.setMinutes(end.getMinutes() - 10);
  await dialog.getByLabel('Start').fill(localInput(new Date(end.getTime() - 2 * 86_400_000)));
  await dialog.getByLabel('End').fill(localInput(end));
  await expect(dialog).toContainText('This range holds 2880 times of the schedule');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(dialog.getByRole('alert')).toContainText('endAt');
  await expect(dialog.getByRole('alert')).toContainText('HTTP 400');

  // Five minutes: five times, each started (none had run: the schedule began after them).
  await dialog.getByLabel('Start').fill(localInput(new Date(end.getTime() - 5 * 60_000)));
  await expect(dialog).toContainText('This range holds 5 times of the schedule');
  await dialog.getByLabel('Overlap').selectOption('ALLOW_ALL');
  await assertAccessible(page, 'the backfill dialog');
  await screenshot(page, 'schedule-backfill', dialog);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(panel.getByRole('status').filter({ hasText: 'Backfill: started 5, skipped 0' })).toBeVisible();
  await expect(panel.getByRole('button', { name: 'Backfill' })).toBeFocused();

  // The same range again: every time already ran, so all are skipped.
  await panel.getByRole('button', { name: 'Backfill' }).click();
  await dialog.getByLabel('Start').fill(localInput(new Date(end.getTime() - 5 * 60_000)));
  await dialog.getByLabel('End').fill(localInput(end));
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await expect(panel.getByRole('status').filter({ hasText: 'Backfill: started 0, skipped 5' })).toBeVisible();
});

test('Deliveries shows the schedule’s actions with source Schedule, no answer and no address', async ({ page }) => {
  await signIn(page);
  await page.goto(`/console/deliveries?automation=${encodeURIComponent(shared.scheduleId!)}`);
  await expect(page.getByRole('heading', { level: 1, name: 'Deliveries' })).toBeVisible();
  await expect(page.getByRole('columnheader', { name: 'Source', exact: true })).toBeVisible();
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'Schedule', exact: true }) });
  await expect(row.first()).toBeVisible();
  await expect(row.filter({ hasText: 'skipped' }).first()).toBeVisible();
  await assertAccessible(page, 'the deliveries of a schedule automation');
});

test('at 390 px the schedule page fits the window and its buttons are reached', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await signIn(page);
  await page.goto(`/console/automations/${encodeURIComponent(shared.scheduleId!)}`);
  const panel = page.getByRole('region', { name: 'Schedule' });
  await expect(panel.getByRole('list', { name: 'Next runs' }).getByRole('listitem').first()).toBeVisible();
  expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
  for (const name of ['Pause schedule', 'Run now', 'Backfill'])
    await expect(panel.getByRole('button', { name })).toBeVisible();
  await assertAccessible(page, 'a schedule automation at 390 px');
});

test('an event automation: the types as checkboxes, saved with those checked', async ({ page, request }) => {
  await signIn(page);
  await newAutomation(page, 'On joiners and revocations');
  await page.getByLabel('Trigger kind').selectOption({ label: 'Event (directory changes)' });
  const types = page.getByRole('group', { name: 'Event types' });
  await expect(types.getByRole('checkbox')).toHaveCount(7);
  // None checked: the API's 400 names trigger.event.types, shown in the group.
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(types).toContainText('trigger.event.types');
  await types.getByRole('checkbox', { name: 'user.created' }).check();
  await types.getByRole('checkbox', { name: 'grant.revoked' }).check();
  await assertAccessible(page, 'the event trigger form');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'On joiners and revocations' })).toBeVisible();
  const id = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  const saved = await (await request.get(`/api/v1/automations/${id}`, { headers: await bearer(request) })).json();
  expect(saved.automation.trigger.event).toEqual({ types: ['user.created', 'grant.revoked'], enabled: true });
  await expect(page.getByRole('region', { name: 'Listener' })).toContainText('directory events');

  await page.reload();
  await expect(types.getByRole('checkbox', { name: 'user.created' })).toBeChecked();
  await expect(types.getByRole('checkbox', { name: 'grant.revoked' })).toBeChecked();
  await expect(types.getByRole('checkbox', { name: 'user.updated' })).not.toBeChecked();

  // Published, a new user starts its run: its delivery log has the event, source Event, reason started.
  const listener = page.getByRole('region', { name: 'Listener' });
  await listener.getByRole('button', { name: 'Publish', exact: true }).click();
  await expect(listener.getByText(/Published \(version 1\)/)).toBeVisible();
  const user = await request.post('/api/v1/users', {
    headers: await bearer(request),
    data: { displayName: `Joiner ${Date.now()}`, type: 'USER_TYPE_HUMAN' },
  });
  expect(user.status()).toBe(200);
  await listener.getByRole('link', { name: 'Deliveries' }).click();
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'Event', exact: true }) });
  await expect(row.filter({ hasText: 'started' })).toHaveCount(1);
  await expect(row.getByRole('link', { name: 'Open run' })).toBeVisible();
  await assertAccessible(page, 'the deliveries of an event automation');
});
