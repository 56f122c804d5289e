// A real OpenID Connect provider for the sign-in tests: panva's oidc-provider (OpenID
// Certified), on 127.0.0.1:OIDC_PORT, with one confidential client and the accounts of a JSON
// file (docs/sign-in.md, How it is tested).
//
//   OIDC_PORT=… OIDC_CLIENT_ID=… OIDC_CLIENT_SECRET=… OIDC_REDIRECT_URI=… \
//   OIDC_ACCOUNTS=accounts.json node tests/oidc/provider.js
//
// accounts.json: {"alice": {"email": "…", "name": "…", "groups": ["…"]}, …}. It is read again
// at every sign-in, so a test changes someone's groups by rewriting it (as an administrator
// would in the directory) and the next sign-in sees them. Sign-in is oidc-provider's own
// development interactions: a login form (any password) and a consent form.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const need = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`provider.js: ${name} is required`);
    process.exit(2);
  }
  return value;
};

const port = Number(need('OIDC_PORT'));
const accountsPath = need('OIDC_ACCOUNTS');
const issuer = `http://127.0.0.1:${port}`;

// A signing key made for this run only.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: 'test' };

const accounts = () => JSON.parse(readFileSync(accountsPath, 'utf8'));

const provider = new Provider(issuer, {
  clients: [{
    client_id: need('OIDC_CLIENT_ID'),
    client_secret: need('OIDC_CLIENT_SECRET'),
    redirect_uris: [need('OIDC_REDIRECT_URI')],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  // `groups` is a scope of its own, as at Dex or Okta, and a claim of the userinfo answer.
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['kuae-ops-tests-only'] },
  async findAccount(ctx, id) {
    const account = accounts()[id];
    if (!account) {
      return undefined;
    }
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, email_verified: true, ...accounts()[id] };
      },
    };
  },
});

const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
