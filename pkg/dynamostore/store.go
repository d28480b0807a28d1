// Package dynamostore implements account.Store on one DynamoDB table.
//
// The layout (keys in keys.go, items in items.go, table in table.go) and the
// cost of every operation are described in docs/dynamodb.md. In short:
// uniqueness is enforced by guard items written in the same
// TransactWriteItems as the item they guard; every read that decides
// security or uniqueness is strongly consistent; a verify is one BatchGetItem.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"latchkey/pkg/account"
)

// maxTransactItems is DynamoDB's limit on the items of one transaction.
const maxTransactItems = 100

// Store is an account.Store on one DynamoDB table. It is safe for concurrent
// use; it holds no state besides the client.
type Store struct {
	client          *dynamodb.Client
	table           *string
	conflictRetries int
	timeout         time.Duration
}

var _ account.Store = (*Store)(nil)

// Option configures a Store.
type Option func(*Store)

// WithConflictRetries sets how many times a transaction cancelled by a
// TransactionConflict (another transaction holding one of its items, e.g.
// two clients claiming the same e-mail at once) is retried before the store
// reports CodeUnavailable. The default is 8. The SDK does not retry these
// itself because the cancellation is not a transport failure.
func WithConflictRetries(n int) Option {
	return func(s *Store) { s.conflictRetries = max(n, 0) }
}

// New returns a Store over table. The client is the caller's: build it once
// at cold start and share it. The store calls DynamoDB through a copy of it
// (same HTTP client and connections, same middleware) that bounds every
// call with the timeout of WithTimeout: one place, so that no call, present
// or future, can hang on a database that stopped answering.
func New(client *dynamodb.Client, table string, opts ...Option) *Store {
	s := &Store{table: aws.String(table), conflictRetries: 8, timeout: DefaultTimeout}
	for _, o := range opts {
		o(s)
	}
	bound := deadline{timeout: s.timeout, table: table}
	s.client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, bound.add)
	})
	return s
}

// Close does nothing: the DynamoDB client holds no resources that need
// releasing, and it belongs to the caller.
func (s *Store) Close() error { return nil }

// Conditions used throughout. Every item has a pk, so attribute_exists(pk)
// means "the item exists".
var (
	condAbsent  = expression.AttributeNotExists(expression.Name("pk"))
	condPresent = expression.AttributeExists(expression.Name("pk"))
	// condLive is condPresent for a user or organization that is not being
	// deleted: AddMember requires it of both sides.
	condLive = condPresent.And(expression.AttributeNotExists(expression.Name("deleting")))
)

func notFound(what string) error { return account.Errorf(account.CodeNotFound, "%s not found", what) }

var (
	errEmailTaken    = account.Errorf(account.CodeEmailTaken, "a user with this e-mail address exists already")
	errSlugTaken     = account.Errorf(account.CodeSlugTaken, "an organization with this slug exists already")
	errAlreadyMember = account.Errorf(account.CodeAlreadyMember, "the user is a member of the organization already")
)

// ---- building blocks ----

func marshalKey(k key) (map[string]types.AttributeValue, error) {
	m, err := attributevalue.MarshalMap(k)
	if err != nil {
		return nil, account.Internal(err)
	}
	return m, nil
}

func condition(c expression.ConditionBuilder) (expression.Expression, error) {
	e, err := expression.NewBuilder().WithCondition(c).Build()
	if err != nil {
		return e, account.Internal(err)
	}
	return e, nil
}

func (s *Store) put(item any, c expression.ConditionBuilder) (types.TransactWriteItem, error) {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return types.TransactWriteItem{}, account.Internal(err)
	}
	e, err := condition(c)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName: s.table, Item: av,
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

func (s *Store) check(k key, c expression.ConditionBuilder) (types.TransactWriteItem, error) {
	av, err := marshalKey(k)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	e, err := condition(c)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: s.table, Key: av,
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// del deletes k; with a condition unless c is nil.
func (s *Store) del(k key, c *expression.ConditionBuilder) (types.TransactWriteItem, error) {
	av, err := marshalKey(k)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	d := &types.Delete{TableName: s.table, Key: av}
	if c != nil {
		e, err := condition(*c)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues = e.Condition(), e.Names(), e.Values()
	}
	return types.TransactWriteItem{Delete: d}, nil
}

func (s *Store) update(k key, u expression.UpdateBuilder, c expression.ConditionBuilder) (types.TransactWriteItem, error) {
	av, err := marshalKey(k)
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	e, err := expression.NewBuilder().WithUpdate(u).WithCondition(c).Build()
	if err != nil {
		return types.TransactWriteItem{}, account.Internal(err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: s.table, Key: av, UpdateExpression: e.Update(),
		ConditionExpression: e.Condition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// build collects transaction items, stopping at the first error.
func build(items ...func() (types.TransactWriteItem, error)) ([]types.TransactWriteItem, error) {
	out := make([]types.TransactWriteItem, 0, len(items))
	for _, f := range items {
		it, err := f()
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// transact runs one TransactWriteItems and maps a cancellation to
// onCheckFailed (see cancellation), retrying conflicts (see retryConflicts).
func (s *Store) transact(ctx context.Context, items []types.TransactWriteItem, onCheckFailed ...error) error {
	_, err := s.transactReturningOld(ctx, items, onCheckFailed...)
	return err
}

// transactReturningOld is transact that also returns, when a condition
// fails, the item as it was if that item asked for it
// (ReturnValuesOnConditionCheckFailure ALL_OLD); nil otherwise.
func (s *Store) transactReturningOld(ctx context.Context, items []types.TransactWriteItem, onCheckFailed ...error) (map[string]types.AttributeValue, error) {
	var old map[string]types.AttributeValue
	err := s.retryConflicts(ctx, func() error {
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var mapped error
		if old, mapped = cancellation(err, onCheckFailed); mapped != nil {
			return mapped
		}
		return storeErr(err)
	})
	return old, err
}

// retryConflicts runs write until it returns anything but a conflict (see
// errTransactionConflict), with jittered backoff in between, at most
// s.conflictRetries more times; then the store reports CodeUnavailable.
// Once the other transaction has committed, the retry fails its condition
// (e.g. email_taken) or succeeds, which is the answer a serial execution
// would have given.
func (s *Store) retryConflicts(ctx context.Context, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if !errors.Is(err, errTransactionConflict) {
			return err
		}
		if attempt >= s.conflictRetries {
			return account.Unavailable(err)
		}
		backoff := time.Duration(5<<min(attempt, 5)) * time.Millisecond
		select {
		case <-ctx.Done():
			return fmt.Errorf("dynamostore: abandoned by the caller: %w", ctx.Err())
		case <-time.After(backoff/2 + rand.N(backoff/2+1)):
		}
	}
}

// getItem reads one item strongly consistently into out. found is false when
// there is no such item.
func (s *Store) getItem(ctx context.Context, k key, out any) (found bool, err error) {
	av, err := marshalKey(k)
	if err != nil {
		return false, err
	}
	res, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: av, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, storeErr(err)
	}
	if res.Item == nil {
		return false, nil
	}
	if err := attributevalue.UnmarshalMap(res.Item, out); err != nil {
		return false, account.Internal(err)
	}
	return true, nil
}

// list reads one page of a gsi1 partition, newest first. It asks for one
// item more than the page holds to learn whether there is a next page
// without a second request. The position is the gsi1sk of the last item
// returned: unique within the partition, so "gsi1sk < position" resumes
// exactly after it, and items created since sort before the first page.
// conv turns each item of type I into the domain's T; it drops an item by
// returning false (a user or organization whose delete has begun).
func list[I, T any](ctx context.Context, s *Store, partition string, p account.ListParams, conv func(I) (T, bool)) (account.Page[T], error) {
	if p.Limit < 1 {
		return account.Page[T]{}, account.Internal(fmt.Errorf("dynamostore: list limit %d", p.Limit))
	}
	kc := expression.Key("gsi1pk").Equal(expression.Value(partition))
	if p.After != "" {
		kc = kc.And(expression.Key("gsi1sk").LessThan(expression.Value(p.After)))
	}
	e, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return account.Page[T]{}, account.Internal(err)
	}
	want := p.Limit + 1
	in := &dynamodb.QueryInput{
		TableName: s.table, IndexName: aws.String(GSI1),
		KeyConditionExpression: e.KeyCondition(), ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(want)),
	}
	// A page stops early only at DynamoDB's 1 MB response limit, far above
	// 101 items of this table; the paginator covers that case anyway.
	var raw []map[string]types.AttributeValue
	pages := dynamodb.NewQueryPaginator(s.client, in)
	for pages.HasMorePages() && len(raw) < want {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return account.Page[T]{}, storeErr(err)
		}
		raw = append(raw, out.Items...)
	}
	next := ""
	if len(raw) > p.Limit {
		raw = raw[:p.Limit]
		var last struct {
			GSI1SK string `dynamodbav:"gsi1sk"`
		}
		if err := attributevalue.UnmarshalMap(raw[len(raw)-1], &last); err != nil {
			return account.Page[T]{}, account.Internal(err)
		}
		next = last.GSI1SK
	}
	items := make([]I, 0, len(raw))
	if err := attributevalue.UnmarshalListOfMaps(raw, &items); err != nil {
		return account.Page[T]{}, account.Internal(err)
	}
	page := account.Page[T]{Items: make([]T, 0, len(items)), Next: next}
	for _, it := range items {
		if t, ok := conv(it); ok {
			page.Items = append(page.Items, t)
		}
	}
	return page, nil
}

// ---- users ----

// CreateUser writes the user and its e-mail guard in one transaction; see
// claim for an e-mail held by a user whose delete was cut off.
// CodeEmailTaken.
func (s *Store) CreateUser(ctx context.Context, u account.User) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.put(newUserItem(u), condAbsent) },
		func() (types.TransactWriteItem, error) {
			return s.put(guardItem{key: emailKey(u.Email), OwnerID: u.ID}, condAbsent)
		},
	)
	if err != nil {
		return err
	}
	return s.claim(ctx, items, errEmailTaken, userKey, s.DeleteUser)
}

// claim runs a create transaction whose second item is the guard that
// claims a unique value (an e-mail or a slug), and whose first item is the
// new owner. If the guard is taken by an owner flagged deleting (a delete
// cut off between its transactions, see cascade), claim finishes that delete
// and tries once more: an abandoned delete holds its e-mail or slug only
// until the next attempt to claim it, never forever. That costs one GetItem
// of the holder on a conflict, nothing otherwise: the guard's old item,
// which names the holder, comes back with the failed condition. If the
// holder cannot be read, the conflict stands.
func (s *Store) claim(ctx context.Context, items []types.TransactWriteItem, taken error, holderKey func(id string) key, finishDelete func(context.Context, string) error) error {
	items[1].Put.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	old, err := s.transactReturningOld(ctx, items, nil, taken)
	if !errors.Is(err, taken) {
		return err
	}
	var g guardItem
	if old == nil || attributevalue.UnmarshalMap(old, &g) != nil || g.OwnerID == "" {
		return err
	}
	var holder struct {
		Deleting bool `dynamodbav:"deleting"`
	}
	if found, rerr := s.getItem(ctx, holderKey(g.OwnerID), &holder); rerr != nil || !found || !holder.Deleting {
		return err
	}
	if ferr := finishDelete(ctx, g.OwnerID); ferr != nil && !account.IsCode(ferr, account.CodeNotFound) {
		return ferr
	}
	return s.transact(ctx, items, nil, taken)
}

// GetUser reads the user strongly consistently, so that a client reads its
// own writes. CodeNotFound, also for a user whose delete has begun.
func (s *Store) GetUser(ctx context.Context, id string) (account.User, error) {
	var it userItem
	found, err := s.getItem(ctx, userKey(id), &it)
	if err != nil {
		return account.User{}, err
	}
	if !found || it.Deleting {
		// A user whose delete has begun is gone to readers, as it is to
		// updates and AddMember; the delete's retry still finds it.
		return account.User{}, notFound("user")
	}
	return it.user(), nil
}

// GetUserByEmail reads the e-mail guard, then the user it names, both
// strongly consistently. CodeNotFound.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (account.User, error) {
	var g guardItem
	found, err := s.getItem(ctx, emailKey(email), &g)
	if err != nil {
		return account.User{}, err
	}
	if !found {
		return account.User{}, notFound("user")
	}
	return s.GetUser(ctx, g.OwnerID)
}

// UpdateUser applies the patch with one UpdateItem that sets only the
// fields it holds, so a concurrent update of another field is kept, and
// returns the item as written (ReturnValues ALL_NEW): no read before or
// after. A user whose deletion has begun is not found. CodeNotFound.
func (s *Store) UpdateUser(ctx context.Context, id string, p account.UserPatch) (account.User, error) {
	upd := expression.Set(expression.Name("updated_at"), expression.Value(p.UpdatedAt.UTC()))
	if p.Name != nil {
		upd = upd.Set(expression.Name("name"), expression.Value(*p.Name))
	}
	var it userItem
	if err := s.updateItem(ctx, userKey(id), upd, condLive, &it, "user"); err != nil {
		return account.User{}, err
	}
	return it.user(), nil
}

// updateItem applies upd to the item k if it meets cond, in one UpdateItem,
// and decodes the item as written into out. CodeNotFound naming what when
// cond fails: every condition here requires at least that the item exists,
// and without one UpdateItem would create an item from nothing.
func (s *Store) updateItem(ctx context.Context, k key, upd expression.UpdateBuilder, cond expression.ConditionBuilder, out any, what string) error {
	it, err := s.update(k, upd, cond)
	if err != nil {
		return err
	}
	u := it.Update
	var res *dynamodb.UpdateItemOutput
	err = s.retryConflicts(ctx, func() (err error) {
		res, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: s.table, Key: u.Key, UpdateExpression: u.UpdateExpression,
			ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
			ExpressionAttributeValues: u.ExpressionAttributeValues, ReturnValues: types.ReturnValueAllNew,
		})
		return conflict(err)
	})
	if _, ok := conditionFailed(err); ok {
		return notFound(what)
	}
	if err != nil {
		return storeErr(err)
	}
	if err := attributevalue.UnmarshalMap(res.Attributes, out); err != nil {
		return account.Internal(err)
	}
	return nil
}

// markDeleting sets the deleting flag on an existing user or organization
// and returns the item as it now is. From then on AddMember refuses it, so
// the membership Query that follows sees every membership there will be.
func (s *Store) markDeleting(ctx context.Context, k key, out any, what string) error {
	return s.updateItem(ctx, k, expression.Set(expression.Name("deleting"), expression.Value(true)), condPresent, out, what)
}

// memberSides returns the IDs on the other side of every membership in the
// partition of owner (an organization or a user), read strongly consistently.
func (s *Store) memberSides(ctx context.Context, owner key) ([]string, error) {
	kc := expression.Key("pk").Equal(expression.Value(owner.PK)).And(expression.Key("sk").BeginsWith(prefixMember))
	e, err := expression.NewBuilder().WithKeyCondition(kc).
		WithProjection(expression.NamesList(expression.Name("sk"))).Build()
	if err != nil {
		return nil, account.Internal(err)
	}
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName: s.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression: e.KeyCondition(), ProjectionExpression: e.Projection(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	})
	var ids []string
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, storeErr(err)
		}
		var keys []key
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &keys); err != nil {
			return nil, account.Internal(err)
		}
		for _, k := range keys {
			ids = append(ids, idFrom(k.SK, prefixMember))
		}
	}
	return ids, nil
}

// cascade deletes the memberships pairs (both sides of each) and then the
// final items. When everything fits in one transaction it is one
// transaction. Otherwise the pairs go first, 50 to a transaction (each pair
// atomically), and the final transaction (the owner and its guard, with the
// last pairs) comes last: the guard disappears together with its owner,
// never before and never without it. A failure in between leaves the owner
// in place, marked deleting, with fewer memberships; retrying the delete
// finishes the job. final must hold the owner first; onCheckFailed applies
// to final's items.
func (s *Store) cascade(ctx context.Context, pairs [][2]key, final []types.TransactWriteItem, onCheckFailed ...error) error {
	var items []types.TransactWriteItem
	for _, p := range pairs {
		a, err := s.del(p[0], nil)
		if err != nil {
			return err
		}
		b, err := s.del(p[1], nil)
		if err != nil {
			return err
		}
		items = append(items, a, b)
	}
	for len(final)+len(items) > maxTransactItems {
		chunk := items[:maxTransactItems]
		if err := s.transact(ctx, chunk); err != nil {
			return err
		}
		items = items[maxTransactItems:]
	}
	return s.transact(ctx, append(final, items...), onCheckFailed...)
}

// DeleteUser deletes the user, both sides of each of its memberships and its
// e-mail guard; see cascade for users with more than 49 memberships.
// CodeNotFound.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	var u userItem
	if err := s.markDeleting(ctx, userKey(id), &u, "user"); err != nil {
		return err
	}
	return s.deleteWithMemberships(ctx, id, userKey(id), emailKey(u.Email), func(orgID string) [2]key {
		return [2]key{orgMemberKey(orgID, id), userMemberKey(id, orgID)}
	}, "user")
}

// deleteWithMemberships is the rest of a delete after markDeleting: it finds
// the memberships in the partition of owner (a user or an organization) and
// deletes both sides of each (pair gives them from the other side's ID),
// then owner and its guard, which must still belong to id.
func (s *Store) deleteWithMemberships(ctx context.Context, id string, owner, guard key, pair func(otherID string) [2]key, what string) error {
	otherIDs, err := s.memberSides(ctx, owner)
	if err != nil {
		return err
	}
	pairs := make([][2]key, len(otherIDs))
	for i, otherID := range otherIDs {
		pairs[i] = pair(otherID)
	}
	ownedBy := expression.Name("owner_id").Equal(expression.Value(id))
	final, err := build(
		func() (types.TransactWriteItem, error) { return s.del(owner, &condPresent) },
		func() (types.TransactWriteItem, error) { return s.del(guard, &ownedBy) },
	)
	if err != nil {
		return err
	}
	return s.cascade(ctx, pairs, final, notFound(what))
}

// ListUsers lists users newest first from the USERS partition of gsi1.
func (s *Store) ListUsers(ctx context.Context, p account.ListParams) (account.Page[account.User], error) {
	return list(ctx, s, listUsers, p, func(it userItem) (account.User, bool) {
		return it.user(), !it.Deleting // as in GetUser
	})
}

// ---- organizations ----

// CreateOrganization writes the organization and its slug guard in one
// transaction; see claim. CodeSlugTaken.
func (s *Store) CreateOrganization(ctx context.Context, o account.Organization) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.put(newOrgItem(o), condAbsent) },
		func() (types.TransactWriteItem, error) {
			return s.put(guardItem{key: slugKey(o.Slug), OwnerID: o.ID}, condAbsent)
		},
	)
	if err != nil {
		return err
	}
	return s.claim(ctx, items, errSlugTaken, orgKey, s.DeleteOrganization)
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
		return account.Organization{}, notFound("organization")
	}
	return it.organization(), nil
}

// UpdateOrganization applies the patch as UpdateUser does: one UpdateItem,
// no read. CodeNotFound, also while the organization is being deleted.
func (s *Store) UpdateOrganization(ctx context.Context, id string, p account.OrganizationPatch) (account.Organization, error) {
	upd := expression.Set(expression.Name("updated_at"), expression.Value(p.UpdatedAt.UTC()))
	if p.Name != nil {
		upd = upd.Set(expression.Name("name"), expression.Value(*p.Name))
	}
	if p.Plan != nil {
		upd = upd.Set(expression.Name("plan"), expression.Value(*p.Plan))
	}
	var it orgItem
	if err := s.updateItem(ctx, orgKey(id), upd, condLive, &it, "organization"); err != nil {
		return account.Organization{}, err
	}
	return it.organization(), nil
}

// DeleteOrganization deletes the organization, both sides of each of its
// memberships and its slug guard; see cascade for organizations with more
// than 49 members. CodeNotFound.
func (s *Store) DeleteOrganization(ctx context.Context, id string) error {
	var o orgItem
	if err := s.markDeleting(ctx, orgKey(id), &o, "organization"); err != nil {
		return err
	}
	return s.deleteWithMemberships(ctx, id, orgKey(id), slugKey(o.Slug), func(userID string) [2]key {
		return [2]key{orgMemberKey(id, userID), userMemberKey(userID, id)}
	}, "organization")
}

// ListOrganizations lists organizations newest first from the ORGS
// partition of gsi1.
func (s *Store) ListOrganizations(ctx context.Context, p account.ListParams) (account.Page[account.Organization], error) {
	return list(ctx, s, listOrgs, p, func(it orgItem) (account.Organization, bool) {
		return it.organization(), !it.Deleting // as in GetOrganization
	})
}

// ---- memberships ----

// AddMember checks that the organization and the user exist (and are not
// being deleted) and writes both sides of the membership, in one
// transaction. CodeNotFound naming the organization or the user;
// CodeAlreadyMember.
func (s *Store) AddMember(ctx context.Context, m account.Membership) error {
	orgSide, userSide := newMemberItems(m)
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.check(orgKey(m.OrganizationID), condLive) },
		func() (types.TransactWriteItem, error) { return s.check(userKey(m.UserID), condLive) },
		func() (types.TransactWriteItem, error) { return s.put(orgSide, condAbsent) },
		func() (types.TransactWriteItem, error) { return s.put(userSide, condAbsent) },
	)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, notFound("organization"), notFound("user"), errAlreadyMember, errAlreadyMember)
}

// GetMember reads the organization's side of the membership strongly
// consistently. CodeNotFound.
func (s *Store) GetMember(ctx context.Context, orgID, userID string) (account.Membership, error) {
	var it memberItem
	found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
	if err != nil {
		return account.Membership{}, err
	}
	if !found {
		return account.Membership{}, notFound("membership")
	}
	return it.membership(), nil
}

// UpdateMember sets role and updated_at on both sides in one transaction,
// then reads the organization's side strongly consistently for the one
// thing the patch does not say, created_at (a transaction returns no
// items): 2 requests. Role and updated_at come from the patch, so the
// result is the membership as this update left it even if another update
// lands between the two requests. A membership removed in that instant is
// reported not found, as if the removal had come first. CodeNotFound.
func (s *Store) UpdateMember(ctx context.Context, orgID, userID string, p account.MemberPatch) (account.Membership, error) {
	updatedAt := p.UpdatedAt.UTC()
	upd := expression.Set(expression.Name("role"), expression.Value(p.Role)).
		Set(expression.Name("updated_at"), expression.Value(updatedAt))
	items, err := build(
		func() (types.TransactWriteItem, error) {
			return s.update(orgMemberKey(orgID, userID), upd, condPresent)
		},
		func() (types.TransactWriteItem, error) {
			return s.update(userMemberKey(userID, orgID), upd, condPresent)
		},
	)
	if err != nil {
		return account.Membership{}, err
	}
	if err := s.transact(ctx, items, notFound("membership"), notFound("membership")); err != nil {
		return account.Membership{}, err
	}
	var it memberItem
	found, err := s.getItem(ctx, orgMemberKey(orgID, userID), &it)
	if err != nil {
		return account.Membership{}, err
	}
	if !found {
		return account.Membership{}, notFound("membership")
	}
	m := it.membership()
	m.Role, m.UpdatedAt = p.Role, updatedAt
	return m, nil
}

// RemoveMember deletes both sides in one transaction. CodeNotFound.
func (s *Store) RemoveMember(ctx context.Context, orgID, userID string) error {
	items, err := build(
		func() (types.TransactWriteItem, error) { return s.del(orgMemberKey(orgID, userID), &condPresent) },
		func() (types.TransactWriteItem, error) { return s.del(userMemberKey(userID, orgID), &condPresent) },
	)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, notFound("membership"), notFound("membership"))
}

// ListMembers lists an organization's memberships, newest first.
func (s *Store) ListMembers(ctx context.Context, orgID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(ctx, membersList(orgID), p)
}

// ListUserMemberships lists a user's memberships, newest first.
func (s *Store) ListUserMemberships(ctx context.Context, userID string, p account.ListParams) (account.Page[account.Membership], error) {
	return s.listMemberships(ctx, memberOfList(userID), p)
}

func (s *Store) listMemberships(ctx context.Context, partition string, p account.ListParams) (account.Page[account.Membership], error) {
	return list(ctx, s, partition, p, func(it memberItem) (account.Membership, bool) { return it.membership(), true })
}

// ---- API keys ----

// CreateAPIKey writes the key under its ID and under its hash in one
// transaction. A key with Ancestors goes below its parent in the same
// transaction: a link item in the parent's partition (how a delete finds
// it), and 1 added to the parent's Children, on the condition that the
// parent exists and is not being deleted. A second key with the same hash
// (two processes installing the same bootstrap key at once) fails with
// CodeInternal; the caller re-reads. CodeNotFound if the parent is gone or
// being deleted.
func (s *Store) CreateAPIKey(ctx context.Context, k account.APIKey) error {
	byID, byHash := newAPIKeyItems(k)
	steps := []func() (types.TransactWriteItem, error){
		func() (types.TransactWriteItem, error) { return s.put(byID, condAbsent) },
		func() (types.TransactWriteItem, error) { return s.put(byHash, condAbsent) },
	}
	onCheckFailed := []error{
		account.Internal(errors.New("dynamostore: an API key with this ID exists already")),
		account.Internal(errors.New("dynamostore: an API key with this hash exists already")),
	}
	if n := len(k.Ancestors); n > 0 {
		parent := k.Ancestors[n-1]
		steps = append(steps,
			func() (types.TransactWriteItem, error) {
				return s.update(apiKeyKey(parent), expression.Add(expression.Name("children"), expression.Value(1)), condLive)
			},
			func() (types.TransactWriteItem, error) { return s.put(newKeyLinkItem(parent, k), condAbsent) },
		)
		onCheckFailed = append(onCheckFailed, notFound("API key"),
			account.Internal(errors.New("dynamostore: the API key is linked below its parent already")))
	}
	items, err := build(steps...)
	if err != nil {
		return err
	}
	return s.transact(ctx, items, onCheckFailed...)
}

// GetAPIKey reads a key by ID, strongly consistently, and checks its
// Ancestors (see liveKey). CodeNotFound.
func (s *Store) GetAPIKey(ctx context.Context, id string) (account.APIKey, error) {
	return s.getAPIKey(ctx, apiKeyKey(id))
}

// GetAPIKeyByHash reads the copy of the key stored under its hash, strongly
// consistently: one GetItem on every request authenticated by an API key,
// and a BatchGetItem of its Ancestors for a key that has any (see liveKey).
// CodeNotFound.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash []byte) (account.APIKey, error) {
	return s.getAPIKey(ctx, keyHashKey(hash))
}

func (s *Store) getAPIKey(ctx context.Context, k key) (account.APIKey, error) {
	var it apiKeyItem
	found, err := s.getItem(ctx, k, &it)
	if err != nil {
		return account.APIKey{}, err
	}
	if !found {
		return account.APIKey{}, notFound("API key")
	}
	live, err := s.liveKey(ctx, it, nil)
	if err != nil {
		return account.APIKey{}, err
	}
	if !live {
		return account.APIKey{}, notFound("API key")
	}
	return it.apiKey(), nil
}

// liveKey reports whether the key it (a copy read strongly consistently)
// is live: not being deleted, and neither is any of its Ancestors, each of
// which still exists. A delete of a tree too large for one transaction
// flags only its root before it starts (see DeleteAPIKey), so this is how
// the keys below it are gone from that instant. have holds ancestors'
// items read already, by ID; the others are read with one strongly
// consistent BatchGetItem. A key without ancestors (the bootstrap key and
// the keys it created) costs no read.
func (s *Store) liveKey(ctx context.Context, it apiKeyItem, have map[string]apiKeyItem) (bool, error) {
	if it.Deleting {
		return false, nil
	}
	var missing []key
	for _, id := range it.Ancestors {
		if _, ok := have[id]; !ok {
			missing = append(missing, apiKeyKey(id))
		}
	}
	if len(missing) > 0 {
		read, err := s.batchGet(ctx, missing)
		if err != nil {
			return false, err
		}
		have = maps.Clone(have)
		if have == nil {
			have = make(map[string]apiKeyItem, len(read))
		}
		for _, av := range read {
			var a apiKeyItem
			if err := attributevalue.UnmarshalMap(av, &a); err != nil {
				return false, account.Internal(err)
			}
			have[a.KeyID] = a
		}
	}
	for _, id := range it.Ancestors {
		if a, ok := have[id]; !ok || a.Deleting {
			return false, nil
		}
	}
	return true, nil
}

// ListAPIKeys lists keys newest first from the KEYS partition of gsi1,
// leaving out a key whose delete has begun. The keys below it are listed
// until the delete is finished: checking every key's ancestors would cost
// a BatchGetItem per page, and only a delete cut off halfway is seen here.
func (s *Store) ListAPIKeys(ctx context.Context, p account.ListParams) (account.Page[account.APIKey], error) {
	return list(ctx, s, listKeys, p, func(it apiKeyItem) (account.APIKey, bool) { return it.apiKey(), !it.Deleting })
}

// ---- tokens ----

// CreateToken writes the token record with one PutItem; TTL removes it after
// the token expires. Token IDs are fresh ULIDs, so there is nothing to guard.
func (s *Store) CreateToken(ctx context.Context, t account.TokenRecord) error {
	av, err := attributevalue.MarshalMap(newTokenItem(t))
	if err != nil {
		return account.Internal(err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: av})
	return storeErr(err)
}

// RevokeToken writes the revocation entry unless one exists, in one
// conditional PutItem. When one exists, DynamoDB returns it with the
// failure (ReturnValuesOnConditionCheckFailure), so the first revocation
// time is known without a second request.
func (s *Store) RevokeToken(ctx context.Context, r account.Revocation) (time.Time, error) {
	it, err := s.put(newRevocationItem(r), condAbsent)
	if err != nil {
		return time.Time{}, err
	}
	p := it.Put
	err = s.retryConflicts(ctx, func() error {
		_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: s.table, Item: p.Item,
			ConditionExpression: p.ConditionExpression, ExpressionAttributeNames: p.ExpressionAttributeNames,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return conflict(err)
	})
	if err == nil {
		return r.RevokedAt, nil
	}
	ccf, ok := conditionFailed(err)
	if !ok {
		return time.Time{}, storeErr(err)
	}
	var old revocationItem
	if ccf.Item != nil {
		if err := attributevalue.UnmarshalMap(ccf.Item, &old); err != nil {
			return time.Time{}, account.Internal(err)
		}
		return old.RevokedAt, nil
	}
	// An endpoint that does not return the old item: read it.
	found, err := s.getItem(ctx, revocationKey(r.TokenID), &old)
	if err != nil {
		return time.Time{}, err
	}
	if !found {
		return time.Time{}, account.Internal(errors.New("dynamostore: revocation entry vanished after a failed condition"))
	}
	return old.RevokedAt, nil
}

// unprocessedRetries bounds the re-requests of keys that BatchGetItem left
// unprocessed, which it does only when the table is throttled.
const unprocessedRetries = 4

// TokenStatus reads the revocation entry, the issuing key's item and the
// items of the ancestors the token names in one strongly consistent
// BatchGetItem: 1 request and 2 RCU for a key without ancestors (a
// TransactGetItems would cost 4), 1 more RCU per ancestor. The key's own
// Ancestors decide: any the hint left out are read with a second
// BatchGetItem (liveKey), which a token this service issued never needs.
func (s *Store) TokenStatus(ctx context.Context, tokenID, keyID string, ancestors []string) (account.TokenStatus, error) {
	if len(ancestors) > account.MaxKeyAncestors {
		ancestors = nil // a hint, and not one this service wrote
	}
	keys := []key{revocationKey(tokenID), apiKeyKey(keyID)}
	for _, id := range ancestors {
		keys = append(keys, apiKeyKey(id))
	}
	read, err := s.batchGet(ctx, keys)
	if err != nil {
		return account.TokenStatus{}, err
	}
	var st account.TokenStatus
	items := make(map[string]apiKeyItem, len(read))
	for _, av := range read {
		var k key
		if err := attributevalue.UnmarshalMap(av, &k); err != nil {
			return account.TokenStatus{}, account.Internal(err)
		}
		switch k.SK {
		case sortRevoked:
			var r revocationItem
			if err := attributevalue.UnmarshalMap(av, &r); err != nil {
				return account.TokenStatus{}, account.Internal(err)
			}
			st.RevokedAt = r.RevokedAt
		case sortKey:
			var it apiKeyItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return account.TokenStatus{}, account.Internal(err)
			}
			items[idFrom(k.PK, prefixKey)] = it
		}
	}
	it, ok := items[keyID]
	if !ok {
		return st, nil
	}
	live, err := s.liveKey(ctx, it, items)
	if err != nil {
		return account.TokenStatus{}, err
	}
	if live {
		issuer := it.apiKey()
		st.Key = &issuer
	}
	return st, nil
}

// batchGet reads the items keys (duplicates are read once) with strongly
// consistent BatchGetItem requests of at most 100 keys, and returns those
// that exist, in no particular order. Only under throttling does DynamoDB
// leave keys unprocessed; they are re-requested a few times, then the store
// reports CodeUnavailable.
func (s *Store) batchGet(ctx context.Context, keys []key) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	seen := make(map[key]bool, len(keys))
	var batch []map[string]types.AttributeValue
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		read, err := s.batchGetOnce(ctx, batch)
		out = append(out, read...)
		batch = batch[:0]
		return err
	}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		av, err := marshalKey(k)
		if err != nil {
			return nil, err
		}
		batch = append(batch, av)
		if len(batch) == maxBatchGetKeys {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// maxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const maxBatchGetKeys = 100

// batchGetOnce is one BatchGetItem of at most maxBatchGetKeys keys, with
// its unprocessed keys re-requested.
func (s *Store) batchGetOnce(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	request := map[string]types.KeysAndAttributes{
		*s.table: {Keys: keys, ConsistentRead: aws.Bool(true)},
	}
	var items []map[string]types.AttributeValue
	for attempt := 0; ; attempt++ {
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
		if err != nil {
			return nil, storeErr(err)
		}
		items = append(items, out.Responses[*s.table]...)
		if len(out.UnprocessedKeys) == 0 {
			return items, nil
		}
		if attempt >= unprocessedRetries {
			return nil, account.Unavailable(errors.New("dynamostore: BatchGetItem left keys unprocessed"))
		}
		request = out.UnprocessedKeys
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dynamostore: abandoned by the caller: %w", ctx.Err())
		case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
		}
	}
}
