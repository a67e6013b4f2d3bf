/**
 * The browser tests' OpenID provider (`npm run test:browser` starts it before the service, see
 * playwright.config.ts): the real oidc-provider of test/fixtures on a fixed loopback port, with
 * the console as its client and two people — one in a group OIDC_ROLE_MAP maps to admin, one in
 * no mapped group. Its development login page takes any password.
 */
import { startOidcProvider } from '../../test/fixtures/oidc-provider';
import { OIDC_PEOPLE } from './oidc-people';

const [redirectUri, port] = [process.argv[2], Number(process.argv[3])];
if (!redirectUri || !Number.isInteger(port)) throw new Error('usage: oidc-provider.ts <redirect URI> <port>');

void startOidcProvider(redirectUri, port).then((provider) => {
  for (const person of Object.values(OIDC_PEOPLE)) provider.accounts.set(person.sub, person);
  console.log(`OpenID provider at ${provider.issuer}`);
  const stop = () => void provider.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
});
