package tablestore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Every key of the table is built here, and only here, so that the layout in
// docs/dynamodb.md can be checked against one file.
//
//	item                 pk                   sk                  gsi1pk               gsi1sk
//	user                 USER#<usr_id>        USER                USERS                <usr_id>
//	e-mail guard         EMAIL#<email>        EMAIL               -                    -
//	external id guard    USEREXT#<ext_id>     USEREXT             -                    -
//	organization         ORG#<org_id>         ORG                 ORGS                 <org_id>
//	read copy of an org  ORG#<org_id>#<n>     ORG                 -                    -
//	slug guard           SLUG#<slug>          SLUG                -                    -
//	external id guard    ORGEXT#<ext_id>      ORGEXT              -                    -
//	membership (org)     ORG#<org_id>         MEMBER#<usr_id>     MEMBERS#<org_id>     <created>#<usr_id>
//	membership (user)    USER#<usr_id>        MEMBER#<org_id>     MEMBERSHIPS#<usr_id> <created>#<org_id>
//	API key by id        KEY#<key_id>         KEY                 KEYS                 <key_id>
//	read copy of a key   KEY#<key_id>#<n>     KEY                 -                    -
//	API key by hash      KEYHASH#<hex sha256> KEYHASH             -                    -
//	key below a key      KEY#<parent key_id>  CHILD#<key_id>      -                    -
//	last use of a key    KEYUSE#<key_id>      USE                 -                    -
//	key of an org        KEYORG#<org_id>      KEY#<key_id>        -                    -
//	key of an owner      KEYOWNER#<owner_id>  KEY#<key_id>        -                    -
//	token record         KEY#<key_id>         TOKEN#<tok_id>      -                    -
//	revocation entry     TOKEN#<tok_id>       REVOKED             -                    -
//	read copy of one     TOKEN#<tok_id>#<n>   REVOKED             -                    -
//	public signing keys  CONFIG               JWKS                -                    -
//	formats in force     CONFIG               FORMATS             -                    -
//	idempotency record   IDEM#<key_id>        IDEM#<key>          -                    -
//	event                EVENT#<yyyy-mm-dd>[#<s>]  <evt_id>       -                    -
//	event of an org      EVENTORG#<org_id>[#<s>]   <evt_id>       -                    -
//	status list lease    STATUSLISTS          <list_id>           -                    -
//	status list chunk    STATUS#<list_id>     <chunk, 5 digits>   -                    -
//	usage bucket         USAGE#<key_id|org_id>  <m|h|d>#<start>#<process>  -           -
//
// Read copies (n from 1 to readShards-1; the item itself is copy 0) and
// event shards (s from 1 to eventShards-1; shard 0 has no suffix) are
// described in shards.go.
//
// IDs are ULIDs, so sorting gsi1sk descending lists users, organizations and
// keys newest first. Memberships have no ID of their own; their gsi1sk starts
// with the fixed-width creation time and ends with the other side's ID, which
// keeps it unique within the partition and lets a position be "gsi1sk < last".
const (
	prefixUser       = "USER#"
	prefixEmail      = "EMAIL#"
	prefixOrg        = "ORG#"
	prefixSlug       = "SLUG#"
	prefixUserExt    = "USEREXT#"
	prefixOrgExt     = "ORGEXT#"
	prefixMember     = "MEMBER#"
	prefixMembers    = "MEMBERS#"
	prefixMemberOf   = "MEMBERSHIPS#"
	prefixKey        = "KEY#"
	prefixKeyHash    = "KEYHASH#"
	prefixChild      = "CHILD#"
	prefixKeyUse     = "KEYUSE#"
	prefixKeyLimit   = "KEYLIMIT#"
	prefixKeyOrg     = "KEYORG#"
	prefixKeyOwner   = "KEYOWNER#"
	prefixToken      = "TOKEN#"
	prefixIdem       = "IDEM#"
	prefixEvent      = "EVENT#"
	prefixEventOrg   = "EVENTORG#"
	prefixStatus     = "STATUS#"
	prefixUsage      = "USAGE#"
	pkStatusLists    = "STATUSLISTS"
	sortUser         = "USER"
	sortEmail        = "EMAIL"
	sortOrg          = "ORG"
	sortSlug         = "SLUG"
	sortUserExt      = "USEREXT"
	sortOrgExt       = "ORGEXT"
	sortKey          = "KEY"
	sortKeyHash      = "KEYHASH"
	sortKeyUse       = "USE"
	sortKeyLimit     = "LIMIT"
	sortRevoked      = "REVOKED"
	pkConfig         = "CONFIG"
	sortJWKS         = "JWKS"
	sortFormats      = "FORMATS"
	listUsers        = "USERS"
	listOrgs         = "ORGS"
	listKeys         = "KEYS"
	memberTimeLayout = "20060102T150405.000000000Z"
)

// Key is the primary key of one item.
type Key struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
}

// key is Key, embedded so in the items.
type key = Key

func userKey(id string) key              { return key{prefixUser + id, sortUser} }
func emailKey(email string) key          { return key{prefixEmail + email, sortEmail} }
func orgKey(id string) key               { return key{prefixOrg + id, sortOrg} }
func slugKey(slug string) key            { return key{prefixSlug + slug, sortSlug} }
func userExtKey(ext string) key          { return key{prefixUserExt + ext, sortUserExt} }
func orgExtKey(ext string) key           { return key{prefixOrgExt + ext, sortOrgExt} }
func apiKeyKey(id string) key            { return key{prefixKey + id, sortKey} }
func keyHashKey(hash []byte) key         { return key{prefixKeyHash + hex.EncodeToString(hash), sortKeyHash} }
func keyLinkKey(parentID, id string) key { return key{prefixKey + parentID, prefixChild + id} }
func keyUseKey(id string) key            { return key{prefixKeyUse + id, sortKeyUse} }

// keyLimitKey is the usage record number shard of the key id: a partition
// each, so that a key's uses spread over as many as its limits need.
func keyLimitKey(id string, shard int) key {
	return key{prefixKeyLimit + id + "#" + strconv.Itoa(shard), sortKeyLimit}
}
func keyOrgLinkKey(orgID, id string) key   { return key{prefixKeyOrg + orgID, prefixKey + id} }
func keyOwnerLinkKey(owner, id string) key { return key{prefixKeyOwner + owner, prefixKey + id} }
func tokenKey(keyID, id string) key        { return key{prefixKey + keyID, prefixToken + id} }
func revocationKey(id string) key          { return key{prefixToken + id, sortRevoked} }
func jwksKey() key                         { return key{pkConfig, sortJWKS} }
func formatsKey() key                      { return key{pkConfig, sortFormats} }
func statusLeaseKey(list string) key       { return key{pkStatusLists, list} }
func statusChunkKey(list string, chunk int64) key {
	return key{prefixStatus + list, fmt.Sprintf("%05d", chunk)}
}
func orgEventKey(orgID, id string) key      { return key{prefixEventOrg + orgID, id} }
func orgMemberKey(orgID, userID string) key { return key{prefixOrg + orgID, prefixMember + userID} }
func userMemberKey(userID, orgID string) key {
	return key{prefixUser + userID, prefixMember + orgID}
}

// membersList and memberOfList name the gsi1 partitions that list an
// organization's members and a user's memberships.
func membersList(orgID string) string   { return prefixMembers + orgID }
func memberOfList(userID string) string { return prefixMemberOf + userID }

// memberSort is the gsi1sk of a membership seen from one side: creation time
// in a fixed-width UTC layout (so that strings sort like times), then the
// other side's ID as a tie-breaker.
func memberSort(created time.Time, otherID string) string {
	return created.UTC().Format(memberTimeLayout) + "#" + otherID
}

// idFrom strips a key prefix. TrimPrefix, not TrimLeft: the prefix is a
// string, not a set of characters.
func idFrom(s, prefix string) string { return strings.TrimPrefix(s, prefix) }

// idempotencyKey is the record of an Idempotency-Key of the API key keyID:
// a partition per calling key, outside those that only the auth function
// may write, since every function records the requests it serves.
func idempotencyKey(keyID, k string) key { return key{prefixIdem + keyID, prefixIdem + k} }
