package account

import "context"

// NewOrganization describes an organization to create.
type NewOrganization struct {
	Name       string
	Slug       string
	Plan       string // "" means DefaultPlan
	ExternalID string // "" means none
	Metadata   Metadata
	// RateLimits and Credits bound the uses of the keys bound to the
	// organization, together; none when empty, nil.
	RateLimits []RateLimitRequest
	Credits    *CreditsRequest
}

// OrganizationQuery filters and pages the organization list.
type OrganizationQuery struct {
	PageRequest
	// Slug, when set, finds the one organization with that slug.
	Slug string
	// ExternalID, when set, finds the one organization with that external id.
	ExternalID string
}

// OrganizationUpdate holds the fields of an organization that can change;
// nil leaves a field as it is.
type OrganizationUpdate struct {
	Name *string
	Plan *string
	// ExternalID replaces the external id; "" removes it.
	ExternalID *string
	// Metadata replaces the metadata whole; nil or empty removes it.
	Metadata *Metadata
	// RateLimits, when set, replaces the rate limits; an empty list
	// removes them.
	RateLimits *[]RateLimitRequest
	// SetCredits replaces the credits with Credits (nil removes them):
	// the remaining count starts again from Credits.Remaining.
	SetCredits bool
	Credits    *CreditsRequest
}

// CreateOrganization creates an organization. CodeInsufficientScope,
// CodeOutsideOrganization for a key bound to an organization,
// CodeInvalidRequest, CodeSlugTaken.
func (s *Service) CreateOrganization(ctx context.Context, p Principal, req NewOrganization) (Organization, error) {
	if err := p.Authorize(OpCreateOrganization); err != nil {
		return Organization{}, err
	}
	if p.bound() {
		return Organization{}, outside("create an organization; a key bound to no organization can")
	}
	var problems Problems
	now := s.now()
	o := Organization{
		ID:        NewID(PrefixOrganization, now),
		Name:      normalizeName("name", req.Name, &problems),
		Slug:      req.Slug,
		Plan:      normalizeChoice("plan", req.Plan, DefaultPlan, Plans, &problems),
		CreatedAt: now,
		UpdatedAt: now,
	}
	checkSlug("slug", req.Slug, &problems)
	o.ExternalID = checkExternalID("external_id", req.ExternalID, &problems)
	req.Metadata.check("metadata", &problems)
	o.Metadata = req.Metadata.normalized()
	o.RateLimits = checkRateLimits("rate_limits", req.RateLimits, &problems)
	o.Credits = checkCredits("credits", req.Credits, now, &problems)
	if err := problems.Err(); err != nil {
		return Organization{}, err
	}
	o.Credits.spread(o.RateLimits)
	if err := s.store.CreateOrganization(ctx, p.Write, o); err != nil {
		return Organization{}, storeErr(err)
	}
	s.startCredits(ctx, KeyLimits{KeyID: o.ID, Credits: o.Credits})
	return o, nil
}

// GetOrganization returns an organization. CodeInsufficientScope,
// CodeNotFound, also for another than a bound caller's own.
func (s *Service) GetOrganization(ctx context.Context, p Principal, id string) (Organization, error) {
	if err := p.mayReadOrganization(OpGetOrganization, id); err != nil {
		return Organization{}, err
	}
	o, err := s.store.GetOrganization(ctx, id)
	if err != nil {
		return Organization{}, storeErr(err)
	}
	return s.organizationShown(ctx, o)
}

// mayReadOrganization is the rule of reading the organization id by op,
// checked before any read: CodeInsufficientScope, CodeNotFound for another
// than a bound caller's own.
func (p Principal) mayReadOrganization(op Operation, id string) error {
	if err := p.Authorize(op); err != nil {
		return err
	}
	if !ValidID(PrefixOrganization, id) || !p.seesOrganization(id) {
		return ErrOrganizationNotFound()
	}
	return nil
}

// organizationShown is o with its credits as of now, read from its usage
// record (one read, for an organization with credits only).
func (s *Service) organizationShown(ctx context.Context, o Organization) (Organization, error) {
	orgs := []Organization{o}
	return orgs[0], s.organizationsShown(ctx, orgs)
}

// organizationsShown sets the credits of each of orgs that has them to
// their count as of now: one read for all of them, none without.
func (s *Service) organizationsShown(ctx context.Context, orgs []Organization) error {
	credits := make([]creditsOf, len(orgs))
	for i := range orgs {
		credits[i] = creditsOf{orgs[i].ID, &orgs[i].Credits}
	}
	return s.verifier.limiter.remainingCredits(ctx, credits, s.now())
}

// ListOrganizations lists organizations newest first, or finds one by slug
// or by external id: a lookup is strongly consistent, and its list holds
// the one organization or none. A caller bound to an organization lists
// that one only, and finds no other by a lookup.
// CodeInsufficientScope, CodeInvalidRequest.
func (s *Service) ListOrganizations(ctx context.Context, p Principal, q OrganizationQuery) (List[Organization], error) {
	list, err := s.listOrganizations(ctx, p, q)
	if err != nil {
		return List[Organization]{}, err
	}
	return list, s.organizationsShown(ctx, list.Items)
}

func (s *Service) listOrganizations(ctx context.Context, p Principal, q OrganizationQuery) (List[Organization], error) {
	if err := p.Authorize(OpListOrganizations); err != nil {
		return List[Organization]{}, err
	}
	params, err := s.cursors.params("organizations", q.PageRequest)
	if err != nil {
		return List[Organization]{}, err
	}
	var problems Problems
	switch {
	case q.Slug != "" && q.ExternalID != "":
		problems.Add("external_id", "cannot be given with slug: look an organization up by one of them")
		return List[Organization]{}, problems.Err()
	case q.Slug != "":
		checkSlug("slug", q.Slug, &problems)
		if err := problems.Err(); err != nil {
			return List[Organization]{}, err
		}
		return lookupWhere(p.seesOrganizationOf)(s.store.GetOrganizationBySlug(ctx, q.Slug))
	case q.ExternalID != "":
		id := checkExternalID("external_id", q.ExternalID, &problems)
		if err := problems.Err(); err != nil {
			return List[Organization]{}, err
		}
		return lookupWhere(p.seesOrganizationOf)(s.store.GetOrganizationByExternalID(ctx, id))
	case p.bound():
		// Its own organization is the whole list: one page of one.
		if params.After != "" {
			return List[Organization]{Items: []Organization{}}, nil
		}
		return lookup(s.store.GetOrganization(ctx, p.KeyOrganizationID))
	}
	page, err := s.store.ListOrganizations(ctx, params)
	if err != nil {
		return List[Organization]{}, storeErr(err)
	}
	return toList(s.cursors, "organizations", page), nil
}

// UpdateOrganization changes the given fields of an organization, and only
// those, in one atomic step; a new external id is claimed and the old one
// freed in that step. A caller bound to the organization changes neither
// its plan, nor its external id, nor its rate limits or credits, which are
// the integrator's (CodeOutsideOrganization). CodeInsufficientScope, CodeNotFound,
// CodeInvalidRequest, CodeExternalIDTaken.
func (s *Service) UpdateOrganization(ctx context.Context, p Principal, id string, req OrganizationUpdate) (Organization, error) {
	if err := p.Authorize(OpUpdateOrganization); err != nil {
		return Organization{}, err
	}
	if !ValidID(PrefixOrganization, id) || !p.seesOrganization(id) {
		return Organization{}, ErrOrganizationNotFound()
	}
	if req == (OrganizationUpdate{}) {
		return Organization{}, errNothingToChange
	}
	if err := p.mayChangeOrganization(req); err != nil {
		return Organization{}, err
	}
	var problems Problems
	var name, plan string
	if req.Name != nil {
		name = normalizeName("name", *req.Name, &problems)
	}
	if req.Plan != nil {
		if *req.Plan == "" {
			problems.Add("plan", "must be one of free, starter, pro, enterprise")
		}
		plan = normalizeChoice("plan", *req.Plan, DefaultPlan, Plans, &problems)
	}
	var ext *string
	if req.ExternalID != nil {
		e := checkExternalID("external_id", *req.ExternalID, &problems)
		ext = &e
	}
	var metadata *Metadata
	if req.Metadata != nil {
		req.Metadata.check("metadata", &problems)
		m := req.Metadata.normalized()
		metadata = &m
	}
	now := s.now()
	patch := OrganizationPatch{ExternalID: ext, Metadata: metadata, UpdatedAt: now}
	if req.RateLimits != nil {
		limits := checkRateLimits("rate_limits", *req.RateLimits, &problems)
		patch.RateLimits = &limits
	}
	if req.SetCredits {
		patch.Credits = &CreditsChange{Credits: checkCredits("credits", req.Credits, now, &problems)}
	}
	if err := problems.Err(); err != nil {
		return Organization{}, err
	}
	if c := patch.Credits; c != nil && c.Credits != nil {
		var limits []RateLimit
		if patch.RateLimits != nil {
			limits = *patch.RateLimits
		} else if c.Credits.maxRecords() > 1 {
			// Only to size the credits' records, as for a key.
			o, err := s.store.GetOrganization(ctx, id)
			if err != nil {
				return Organization{}, storeErr(err)
			}
			limits = o.RateLimits
		}
		c.Credits.spread(limits)
	}
	// The store applies the patch atomically: a concurrent PATCH of the
	// other field cannot be overwritten with a value read before it.
	if req.Name != nil {
		patch.Name = &name
	}
	if req.Plan != nil {
		patch.Plan = &plan
	}
	o, err := s.store.UpdateOrganization(ctx, p.Write, id, patch)
	if err != nil {
		return Organization{}, storeErr(err)
	}
	if patch.Credits != nil {
		s.startCredits(ctx, KeyLimits{KeyID: o.ID, Credits: o.Credits})
	}
	return s.organizationShown(ctx, o)
}

// DeleteOrganization deletes an organization and its memberships; its slug
// is free again. A caller bound to the organization cannot delete it
// (CodeOutsideOrganization). CodeInsufficientScope, CodeNotFound.
func (s *Service) DeleteOrganization(ctx context.Context, p Principal, id string) error {
	if err := p.Authorize(OpDeleteOrganization); err != nil {
		return err
	}
	if !ValidID(PrefixOrganization, id) || !p.seesOrganization(id) {
		return ErrOrganizationNotFound()
	}
	if p.bound() {
		return errDeleteOwnOrganization
	}
	return storeErr(s.store.DeleteOrganization(ctx, p.Write, id))
}

// NewMember describes a membership to add.
type NewMember struct {
	UserID string
	Role   string // "" means DefaultMemberRole
}

// AddMember adds a user to an organization. CodeInsufficientScope,
// CodeNotFound (organization or user), CodeInvalidRequest, CodeAlreadyMember.
func (s *Service) AddMember(ctx context.Context, p Principal, orgID string, req NewMember) (Membership, error) {
	if err := p.Authorize(OpAddMember); err != nil {
		return Membership{}, err
	}
	if !ValidID(PrefixOrganization, orgID) || !p.seesOrganization(orgID) {
		return Membership{}, ErrOrganizationNotFound()
	}
	var problems Problems
	if req.UserID == "" {
		problems.Add("user_id", "is required")
	}
	role := normalizeChoice("role", req.Role, DefaultMemberRole, MemberRoles, &problems)
	if err := problems.Err(); err != nil {
		return Membership{}, err
	}
	if !ValidID(PrefixUser, req.UserID) {
		return Membership{}, ErrUserNotFound()
	}
	if p.bound() {
		// It sees no user outside its organization, and every one inside
		// is a member already: it adds users by creating them.
		if err := s.seesUser(ctx, p, req.UserID); err != nil {
			return Membership{}, err
		}
		return Membership{}, ErrAlreadyMember()
	}
	now := s.now()
	m := Membership{OrganizationID: orgID, UserID: req.UserID, Role: role, CreatedAt: now, UpdatedAt: now}
	if err := s.store.AddMember(ctx, p.Write, m); err != nil {
		return Membership{}, storeErr(err)
	}
	return m, nil
}

// ListMembers lists an organization's members, newest first.
// CodeInsufficientScope, CodeNotFound, CodeInvalidRequest.
func (s *Service) ListMembers(ctx context.Context, p Principal, orgID string, r PageRequest) (List[Membership], error) {
	if err := p.Authorize(OpListMembers); err != nil {
		return List[Membership]{}, err
	}
	if !ValidID(PrefixOrganization, orgID) || !p.seesOrganization(orgID) {
		return List[Membership]{}, ErrOrganizationNotFound()
	}
	list := "members/" + orgID
	params, err := s.cursors.params(list, r)
	if err != nil {
		return List[Membership]{}, err
	}
	if _, err := s.store.GetOrganization(ctx, orgID); err != nil {
		return List[Membership]{}, storeErr(err)
	}
	page, err := s.store.ListMembers(ctx, orgID, params)
	if err != nil {
		return List[Membership]{}, storeErr(err)
	}
	return toList(s.cursors, list, page), nil
}

// GetMember returns one membership. CodeInsufficientScope, CodeNotFound.
func (s *Service) GetMember(ctx context.Context, p Principal, orgID, userID string) (Membership, error) {
	if err := p.Authorize(OpGetMember); err != nil {
		return Membership{}, err
	}
	if !ValidID(PrefixOrganization, orgID) || !ValidID(PrefixUser, userID) || !p.seesOrganization(orgID) {
		return Membership{}, ErrMembershipNotFound()
	}
	m, err := s.store.GetMember(ctx, orgID, userID)
	return m, storeErr(err)
}

// UpdateMember changes a member's role. An organization that has an owner
// keeps one: demoting its last owner is CodeLastOwner. CodeInsufficientScope,
// CodeNotFound, CodeInvalidRequest, CodeLastOwner.
func (s *Service) UpdateMember(ctx context.Context, p Principal, orgID, userID, role string) (Membership, error) {
	if err := p.Authorize(OpUpdateMember); err != nil {
		return Membership{}, err
	}
	if !ValidID(PrefixOrganization, orgID) || !ValidID(PrefixUser, userID) || !p.seesOrganization(orgID) {
		return Membership{}, ErrMembershipNotFound()
	}
	var problems Problems
	if role == "" {
		problems.Add("role", "is required")
	}
	role = normalizeChoice("role", role, "", MemberRoles, &problems)
	if err := problems.Err(); err != nil {
		return Membership{}, err
	}
	m, err := s.store.UpdateMember(ctx, p.Write, orgID, userID, MemberPatch{Role: role, UpdatedAt: s.now()})
	if err != nil {
		return Membership{}, storeErr(err)
	}
	return m, nil
}

// RemoveMember removes a user from an organization; removing its last
// owner is CodeLastOwner. CodeInsufficientScope, CodeNotFound,
// CodeLastOwner.
func (s *Service) RemoveMember(ctx context.Context, p Principal, orgID, userID string) error {
	if err := p.Authorize(OpRemoveMember); err != nil {
		return err
	}
	if !ValidID(PrefixOrganization, orgID) || !ValidID(PrefixUser, userID) || !p.seesOrganization(orgID) {
		return ErrMembershipNotFound()
	}
	return storeErr(s.store.RemoveMember(ctx, p.Write, orgID, userID))
}
