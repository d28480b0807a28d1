package oldlayout

// The earlier layout's items, for tests that write a file of it.
type (
	UserItem       = userItem
	OrgItem        = orgItem
	MemberItem     = memberItem
	APIKeyItem     = apiKeyItem
	TokenItem      = tokenItem
	RevocationItem = revocationItem
)

// Their conversions to the domain types.
var (
	UserDomain   = userItem.domain
	OrgDomain    = orgItem.domain
	MemberDomain = memberItem.domain
	APIKeyDomain = apiKeyItem.domain
)
