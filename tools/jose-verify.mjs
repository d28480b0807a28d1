// Verifies a Latchkey access token as a resource server that has only the
// issuer's URL would, with jose (https://github.com/panva/jose, pinned in
// package.json): it fetches the RFC 8414 metadata from the issuer, takes
// its jwks_uri, and verifies the token's signature, algorithm, type,
// issuer, audience and lifetime. Run by cmd/local's TestClient_Jose:
//
//   node tools/jose-verify.mjs ISSUER AUDIENCE TOKEN [ALG]
//
// ALG is the one algorithm allowed, EdDSA unless given (RS256 for a server
// with SIGNING_ALG=RS256).
// On success it prints {"header": ..., "payload": ...} and exits 0; on
// failure it prints {"error": code, "message": ...} and exits 1.
import { createRemoteJWKSet, jwtVerify } from 'jose';

const [issuer, audience, token, alg = 'EdDSA'] = process.argv.slice(2);
try {
  const res = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
  if (!res.ok) throw new Error(`discovery document: HTTP ${res.status}`);
  const metadata = await res.json();
  // RFC 8414, section 3.3: the issuer in the document
  // must be the one it was fetched for.
  if (metadata.issuer !== issuer) throw new Error(`discovery document names the issuer ${metadata.issuer}, not ${issuer}`);
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, {
    issuer,
    audience,
    algorithms: [alg],
    typ: 'at+jwt',
    requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat', 'jti', 'client_id', 'scope'],
  });
  console.log(JSON.stringify({ header: protectedHeader, payload }));
} catch (err) {
  console.log(JSON.stringify({ error: err.code ?? 'ERROR', message: err.message }));
  process.exit(1);
}
