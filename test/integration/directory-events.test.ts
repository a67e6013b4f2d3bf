/**
 * The directory's own events are written in the transaction of the change they describe (the
 * transactional outbox): a user made through the API has exactly one `user.created` event naming
 * its actor and the user; a refused request writes neither the user nor an event. On both stores.
 */
import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerFor, type Caller } from '../helpers/governance';
import { eventTrigger } from '../../src/domain/directory-events';
import { undispatchedEvents } from '../../src/store/directory-events';

for (const target of DATABASES) {
  describeOn(target)(`directory events (${target.label})`, () => {
    let service: TestService;
    let admin: Caller;
    let actor: string;

    beforeAll(async () => {
      service = await startTestService({ target });
      const token = await service.tokenFor('admin');
      admin = callerFor(service, token);
      actor = `client:${(await service.deps.tokens.verify(token))!.clientId}`;
    });
    afterAll(async () => service?.close());

    const events = async () => undispatchedEvents(service.deps.db, 1000);

    it('a user made through the API writes one user.created event with the actor and the user', async () => {
      const before = (await events()).length;
      const made = await admin.post('/api/v1/users', {
        displayName: 'Joiner',
        email: 'joiner@acme.example',
        type: 'USER_TYPE_HUMAN',
      });
      expect(made.status).toBe(200);
      const after = await events();
      expect(after).toHaveLength(before + 1);
      const event = after.at(-1)!;
      expect(eventTrigger(event)).toEqual({
        type: 'user.created',
        eventId: event.id,
        occurredAt: event.occurredAt,
        actor,
        depth: 1,
        user: made.body.user,
      });
    });

    it('a refused user (400) writes no event', async () => {
      const before = (await events()).length;
      const refused = await admin.post('/api/v1/users', { displayName: '', type: 'USER_TYPE_NOPE' });
      expect(refused.status).toBe(400);
      expect(await events()).toHaveLength(before);
    });
  });
}
