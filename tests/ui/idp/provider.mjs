// A real OpenID Connect provider for the dashboard's sign-in tests: panva's oidc-provider (OpenID
// Certified), so the tests meet a provider's own discovery, login, consent, PKCE, token and ID-token
// rules rather than a mock written to agree with our client.
//
//   node provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
//
// (or IDP_PORT, IDP_CLIENT_ID, IDP_CLIENT_SECRET, IDP_REDIRECT_URI). The issuer is
// http://127.0.0.1:PORT; it prints "listening ISSUER" once it accepts connections, then "asked METHOD
// PATH" for each request (the path only: a query can hold a code). With IDP_CLAIMS_IN_ID_TOKEN=1 the
// account's claims are in the ID token too (as Google's or Keycloak's are), not only at the
// userinfo endpoint as a conforming provider keeps them in the code flow. Its development
// interactions take any login and password: login "alice" is the account whose email is
// alice@example.test (verified). PKCE is required of every client, so a client that forgets it fails.
// oidc-provider 8.x is pinned (package.json): it runs on Node 18 (Debian 12's nodejs), 20 and 22;
// 9.x calls APIs Node 18 lacks.
import { randomBytes } from 'node:crypto';

import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUri] = [
  process.argv[2] ?? process.env.IDP_PORT,
  process.argv[3] ?? process.env.IDP_CLIENT_ID,
  process.argv[4] ?? process.env.IDP_CLIENT_SECRET,
  process.argv[5] ?? process.env.IDP_REDIRECT_URI,
];
if (!port || !clientId || !clientSecret || !redirectUri) {
  console.error('usage: node provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI');
  process.exit(2);
}

const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username'] },
  // the account's claims; as a conforming provider, it puts them in the ID token only where no
  // access token can fetch them (so a code-flow client meets them at the userinfo endpoint)
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, email: `${sub}@example.test`, email_verified: true, preferred_username: sub };
      },
    };
  },
  conformIdTokenClaims: process.env.IDP_CLAIMS_IN_ID_TOKEN !== '1',
  pkce: { methods: ['S256'], required: () => true },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  features: { devInteractions: { enabled: true } },
});

provider.use(async (ctx, next) => {
  console.log(`asked ${ctx.method} ${ctx.path}`);
  await next();
});

const server = provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
