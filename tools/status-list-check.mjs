// Checks Latchkey access tokens against their status lists as a resource
// server that verifies tokens offline would, with the OpenWallet
// Foundation's implementation of draft-ietf-oauth-status-list
// (@sd-jwt/jwt-status-list) and jose (both pinned in package.json): it reads
// each token's reference (getStatusListFromJWT), fetches the Status List
// Token at its uri, verifies its signature against the issuer's jwks_uri
// with typ statuslist+jwt and sub the uri, decodes the list
// (getListFromStatusListJWT) and reads the token's status. Run by
// cmd/local's TestClient_StatusList:
//
//   node tools/status-list-check.mjs ISSUER TOKEN...
//
// On success it prints a JSON array with, per token, {idx, uri, status,
// aggregated, header, payload} (aggregated: the uri is among the
// aggregation endpoint's lists) and exits 0; on failure it prints
// {"error": code, "message": ...} and exits 1.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { getListFromStatusListJWT, getStatusListFromJWT } from '@sd-jwt/jwt-status-list';

const [issuer, ...tokens] = process.argv.slice(2);
try {
  const res = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
  if (!res.ok) throw new Error(`discovery document: HTTP ${res.status}`);
  const metadata = await res.json();
  if (metadata.issuer !== issuer) throw new Error(`discovery document names the issuer ${metadata.issuer}, not ${issuer}`);
  const jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
  const agg = await fetch(metadata.status_list_aggregation_endpoint);
  if (!agg.ok) throw new Error(`aggregation endpoint: HTTP ${agg.status}`);
  const { status_lists: lists } = await agg.json();
  const out = [];
  for (const token of tokens) {
    const { idx, uri } = getStatusListFromJWT(token);
    const list = await fetch(uri, { headers: { accept: 'application/statuslist+jwt' } });
    if (!list.ok) throw new Error(`${uri}: HTTP ${list.status}`);
    const type = list.headers.get('content-type');
    if (type !== 'application/statuslist+jwt') throw new Error(`${uri}: Content-Type ${type}`);
    const jwt = await list.text();
    const { payload, protectedHeader } = await jwtVerify(jwt, jwks, {
      typ: 'statuslist+jwt',
      subject: uri,
      requiredClaims: ['sub', 'iat', 'exp', 'ttl'],
    });
    const status = getListFromStatusListJWT(jwt).getStatus(idx);
    out.push({ idx, uri, status, aggregated: lists.includes(uri), header: protectedHeader, payload });
  }
  console.log(JSON.stringify(out));
} catch (err) {
  console.log(JSON.stringify({ error: err.code ?? 'ERROR', message: err.message }));
  process.exit(1);
}
