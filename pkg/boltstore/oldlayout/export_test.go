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
