package tablestore

import (
	"context"
	"time"

	"latchkey/pkg/account"
)

// CreateOrganization writes the organization, its slug guard and its
// external id guard (if it has one) in one transaction; see claim.
// CodeSlugTaken, CodeExternalIDTaken.
func (s *Store) CreateOrganization(ctx context.Context, opts account.WriteOptions, o account.Organization) error {
	c := newChange(opts, account.PendingEvent{Type: account.EventOrganizationCreated, Data: o})
	copies, err := s.orgCopyPuts(o.ID, false, time.Time{}, newOrgLimits(o))
	if err != nil {
		return err
	}
	return s.create(ctx, c, newOrgItem(o), o.ID, []claimed{{uniqueSlug, o.Slug}, {uniqueOrgExtID, o.ExternalID}}, s.orgOwners(), copies, nil)
}

func (s *Store) orgOwners() owners {
	return owners{orgKey, s.DeleteOrganization, account.ErrOrganizationNotFound}
}

// GetOrganization reads the organization strongly consistently.
// CodeNotFound, also for an organization whose delete has begun.
func (s *Store) GetOrganization(ctx context.Context, id string) (account.Organization, error) {
	var it orgItem
	found, err := s.getItem(ctx, orgKey(id), &it)
	if err != nil {
		return account.Organization{}, err
	}
	if !found || it.Deleting {
		return account.Organization{}, account.ErrOrganizationNotFound()
	}
	return it.organization(), nil
}

// GetOrganizationBySlug reads the slug guard, then the organization it
// names, both strongly consistently. CodeNotFound.
func (s *Store) GetOrganizationBySlug(ctx context.Context, slug string) (account.Organization, error) {
	return lookupBy(ctx, s, slugKey(slug), s.GetOrganization, account.ErrOrganizationNotFound)
}

// GetOrganizationByExternalID reads the external id guard, then the
// organization it names, both strongly consistently. CodeNotFound.
func (s *Store) GetOrganizationByExternalID(ctx context.Context, externalID string) (account.Organization, error) {
	return lookupBy(ctx, s, orgExtKey(externalID), s.GetOrganization, account.ErrOrganizationNotFound)
}

// UpdateOrganization applies the patch as UpdateUser does: one UpdateItem,
// no read, unless it changes the external id (see updateClaiming) or the
// limits, which the read copies carry too: a change of them updates every
// copy in the same transaction as the item, so that a verify reads the
// limits the item has. CodeNotFound, also while the organization is being
// deleted; CodeExternalIDTaken.
func (s *Store) UpdateOrganization(ctx context.Context, opts account.WriteOptions, id string, p account.OrganizationPatch) (account.Organization, error) {
	c := newChange(opts)
	var it orgItem
	// The item as read: none yet in the UpdateItem without a read.
	stamp := func() time.Time { return account.NextUpdatedAt(p.UpdatedAt, it.UpdatedAt) }
	upd := func() Update { // one per attempt, as in UpdateUser
		upd := set("updated_at", stamp())
		if p.Name != nil {
			upd = upd.set("name", *p.Name)
		}
		if p.Plan != nil {
			upd = upd.set("plan", *p.Plan)
		}
		return setOrgLimits(setMetadata(upd, p.Metadata), p)
	}
	copies, err := s.orgCopyUpdates(id, p)
	if err != nil {
		return account.Organization{}, err
	}
	if p.ExternalID == nil && !c.recording() && copies == nil {
		if err := s.updateItem(ctx, c, orgKey(id), upd(), condLive, &it, account.ErrOrganizationNotFound()); err != nil {
			return account.Organization{}, err
		}
		return it.organization(), nil
	}
	// As in UpdateUser: with events, every update reads first.
	patched := func() account.Organization {
		o := p.Apply(it.organization())
		o.UpdatedAt = stamp()
		return o
	}
	err = s.updateClaiming(ctx, c, orgKey(id), id, &it, upd, func() []move {
		if p.ExternalID == nil {
			return nil
		}
		return []move{{uniqueOrgExtID, it.ExternalID, *p.ExternalID}}
	}, func() bool { return it.Deleting }, func() time.Time { return it.UpdatedAt }, func() account.PendingEvent {
		return account.PendingEvent{Type: account.EventOrganizationUpdated, Data: patched()}
	}, s.orgOwners(), copies)
	if err != nil {
		return account.Organization{}, err
	}
	return patched(), nil
}

// setOrgLimits adds the limits the patch changes to an update of an
// organization's item or of one of its read copies.
func setOrgLimits(upd Update, p account.OrganizationPatch) Update {
	if p.RateLimits != nil {
		if ls := rateLimitItems(*p.RateLimits); ls != nil {
			upd = upd.set("rate_limits", ls)
		} else {
			upd = upd.remove("rate_limits")
		}
	}
	if p.Credits != nil {
		if c := newCreditsItem(p.Credits.Credits); c != nil {
			upd = upd.set("credits", c)
		} else {
			upd = upd.remove("credits")
		}
	}
	return upd
}

// orgCopyUpdates returns the updates of the read copies of the
// organization id that a patch of its limits makes, nil for a patch that
// leaves them: unconditional, in the transaction whose update of the item
// is conditional on its being live. An update, not a Put, so that a
// change of one limit keeps the other, which the item as read might not
// hold yet; a copy missing (an organization created before copies) is
// created with the limits alone, which is all a verify reads of it.
func (s *Store) orgCopyUpdates(id string, p account.OrganizationPatch) ([]Write, error) {
	if p.RateLimits == nil && p.Credits == nil {
		return nil, nil
	}
	out := make([]Write, 0, readShards-1)
	for _, k := range copyKeys(id, orgCopyKey) {
		w, err := s.update(k, setOrgLimits(set("owner_id", id), p), Cond{})
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// DeleteOrganization deletes the organization, both sides of each of its
// memberships, its slug guard, its external id guard and the API keys
// bound to it; see cascade for organizations with more than 49 members (48
// with an external id), and orgkeys.go for the keys, which go first (in
// the same transactions), once the flag has made them stop working.
// CodeNotFound.
func (s *Store) DeleteOrganization(ctx context.Context, opts account.WriteOptions, id string) (err error) {
	var o orgItem
	if err := s.markOrgDeleting(ctx, id, &o); err != nil {
		return err
	}
	// The status list entries of its keys' tokens go INVALID once the flag
	// has made them so (a retry of the delete, which a request cut off
	// here needs anyway, writes them), and again at the end for the tokens
	// issued meanwhile.
	keyIDs, err := s.linkedKeyIDs(ctx, prefixKeyOrg+id)
	if err != nil {
		return err
	}
	start := time.Now()
	read, err := s.invalidateKeyTokens(ctx, keyIDs, liveTokenSince(start), nil)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			_, err = s.invalidateKeyTokens(ctx, keyIDs, start.Add(-time.Second), read)
		}
	}()
	guards := []key{slugKey(o.Slug)}
	if o.ExternalID != "" {
		guards = append(guards, orgExtKey(o.ExternalID))
	}
	keys := func(ctx context.Context) ([][]step, error) { return s.orgKeyGroups(ctx, id) }
	// The read copies stay, flagged, as tombstones that TTL removes (see
	// tombstoneTTL): put again with their expiry, with the organization's
	// delete.
	tombs, err := s.orgCopyPuts(id, true, time.Now().Add(tombstoneTTL), orgLimits{})
	if err != nil {
		return err
	}
	return s.deleteWithMemberships(ctx, newChange(opts), id, orgKey(id), guards, tombs, keys, func(m memberSide) ([]step, error) {
		// The organization goes too: its owner count does not matter.
		org, err := s.del(orgMemberKey(id, m.otherID), Cond{})
		if err != nil {
			return nil, err
		}
		user, err := s.del(userMemberKey(m.otherID, id), Cond{})
		deleted := &account.PendingEvent{Type: account.EventOrganizationMembershipDeleted, Data: m.membership(id, "")}
		return []step{{org, nil, deleted}, {user, nil, nil}}, err
	}, account.PendingEvent{Type: account.EventOrganizationDeleted, Data: o.organization()}, account.ErrOrganizationNotFound())
}

// ListOrganizations lists organizations newest first from the ORGS
// partition of gsi1.
func (s *Store) ListOrganizations(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	return list(ctx, s, listOrgs, prefixOrg, p, func(it orgItem) (account.Organization, bool) {
		return it.organization(), !it.Deleting // as in GetOrganization
	})
}

// markOrgDeleting is markDeleting for the organization id, whose read
// copies (see shards.go) are flagged in the same transaction, so that a
// verify that reads any of them sees the flag from the same instant (they
// stay when the organization goes, until tombstoneTTL has passed): one
// TransactWriteItems of the item and its copies (putting those that an
// organization created before copies existed lacks), then a GetItem of the
// item as it now is. CodeNotFound.
func (s *Store) markOrgDeleting(ctx context.Context, id string, out *orgItem) error {
	upd, err := s.update(orgKey(id), set("deleting", true), condPresent)
	if err != nil {
		return err
	}
	copies, err := s.orgCopyPuts(id, true, time.Time{}, orgLimits{})
	if err != nil {
		return err
	}
	// The first step of a delete: no event, and the record goes with the last.
	if err := s.transact(ctx, change{}, append([]Write{upd}, copies...), account.ErrOrganizationNotFound()); err != nil {
		return err
	}
	found, err := s.getItem(ctx, orgKey(id), out)
	if err != nil {
		return err
	}
	if !found {
		return account.ErrOrganizationNotFound()
	}
	return nil
}
