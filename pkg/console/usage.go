package console

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/httpapi"
)

// UsageSource answers the usage the key and organization pages chart: the
// usage API's answers (GET /v1/api-keys/{id}/usage,
// /v1/organizations/{id}/usage), under the same tenant and scope rules as
// reading the key or organization. It is given the key or organization
// as the page read it, which it need not read again. Config.Usage nil
// means the deployment counts no usage: the pages say so.
type UsageSource interface {
	// KeyUsage returns the key's buckets of interval ("minute", "hour"
	// or "day") from from (inclusive) to to (exclusive), in time order,
	// empty ones left out. CodeNotFound, CodeInsufficientScope.
	KeyUsage(ctx context.Context, p account.Principal, k account.APIKey, from, to time.Time, interval string) ([]UsageBucket, error)
	// OrganizationUsage returns the buckets of every key bound to the
	// organization, as KeyUsage. CodeNotFound, CodeInsufficientScope.
	OrganizationUsage(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, interval string) ([]UsageBucket, error)
	// TopKeys returns the organization's keys with the most verifications
	// from from to to, most first, at most n, of those the principal
	// reads. CodeNotFound, CodeInsufficientScope.
	TopKeys(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, n int) ([]KeyUsageTotal, error)
}

// KeyUsageTotal is one key's usage over a span: verifications by outcome
// and token issuances, with the key's name.
type KeyUsageTotal struct {
	KeyID         string
	Name          string
	Verifications map[string]int64
	TokensIssued  int64
}

// topKeys is how many keys an organization's page ranks.
const topKeys = 10

// usageView is the usage section of a key's or organization's page.
type usageView struct {
	// Available is false when the deployment counts no usage.
	Available bool
	// Problem is why the usage could not be read, if it could not.
	Problem *httpapi.Problem
	// Day and Month are the charts of the last 24 hours, by hour, and of
	// the last 30 days, by day.
	Day, Month template.HTML
	// Top ranks the organization's keys over the last 30 days.
	Top []topKeyRow
}

// topKeyRow is a key of the ranking.
type topKeyRow struct {
	KeyUsageTotal
	Total int64
}

// usageWindows are the spans the pages chart, ending with the step that
// holds now: 24 hours by hour, 30 days by day (UTC).
func usageWindows(now time.Time) (day, month chartWindow) {
	now = now.UTC()
	hour := now.Truncate(time.Hour)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return chartWindow{Title: "Verifications, last 24 hours (by hour)", From: hour.Add(-23 * time.Hour), Step: time.Hour, Steps: 24},
		chartWindow{Title: "Verifications, last 30 days (by day)", From: today.AddDate(0, 0, -29), Step: 24 * time.Hour, Steps: 30}
}

// usage reads and charts the usage of the key k, or of the organization o
// with its top keys when o is not nil, each as the page read it. A failure
// shows on the section, not on the page: an internal one is logged with
// the request id.
func (c *console) usage(r *http.Request, s *session, k account.APIKey, o *account.Organization) usageView {
	if c.usageSource == nil {
		return usageView{}
	}
	u := usageView{Available: true}
	day, month := usageWindows(c.svc.Now())
	read := func(w chartWindow, interval string) ([]UsageBucket, error) {
		to := w.From.Add(time.Duration(w.Steps) * w.Step)
		if o != nil {
			return c.usageSource.OrganizationUsage(r.Context(), s.p, *o, w.From, to, interval)
		}
		return c.usageSource.KeyUsage(r.Context(), s.p, k, w.From, to, interval)
	}
	err := func() error {
		hours, err := read(day, "hour")
		if err != nil {
			return err
		}
		days, err := read(month, "day")
		if err != nil {
			return err
		}
		prefix := "key"
		if o != nil {
			prefix = "org"
		}
		u.Day = renderUsageChart(prefix+"-day", day, hours)
		u.Month = renderUsageChart(prefix+"-month", month, days)
		if o == nil {
			return nil
		}
		top, err := c.usageSource.TopKeys(r.Context(), s.p, *o, month.From, month.From.AddDate(0, 0, month.Steps), topKeys)
		if err != nil {
			return err
		}
		for _, t := range top {
			row := topKeyRow{KeyUsageTotal: t}
			for _, n := range t.Verifications {
				row.Total += n
			}
			u.Top = append(u.Top, row)
		}
		return nil
	}()
	if err != nil {
		u.Day, u.Month, u.Top = "", "", nil
		u.Problem = problemView(err)
		if u.Problem.Code == account.CodeInternal || u.Problem.Code == account.CodeUnavailable {
			c.log.ErrorContext(r.Context(), "console usage failed", "request_id", httpapi.RequestID(r), "error", err.Error())
		}
	}
	return u
}

// Valid is the key's valid verifications.
func (t topKeyRow) Valid() int64 { return t.Verifications["valid"] }

// Refused is the key's verifications of any other outcome.
func (t topKeyRow) Refused() int64 { return t.Total - t.Valid() }

// serviceUsage is the UsageSource of a deployment that counts usage: the
// service's usage reads, under its tenant and scope rules.
type serviceUsage struct{ svc *account.Service }

func (s serviceUsage) KeyUsage(ctx context.Context, p account.Principal, k account.APIKey, from, to time.Time, interval string) ([]UsageBucket, error) {
	b, err := s.svc.APIKeyUsageOf(ctx, p, k, account.UsageQuery{From: from, To: to, Interval: interval})
	return chartBuckets(b), err
}

func (s serviceUsage) OrganizationUsage(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, interval string) ([]UsageBucket, error) {
	b, err := s.svc.OrganizationUsageOf(ctx, p, o, account.UsageQuery{From: from, To: to, Interval: interval})
	return chartBuckets(b), err
}

// TopKeys ranks the organization's keys, then reads each one, and its
// outcomes and issuances over the same days: the organization's buckets
// hold only each key's total (docs/console.md).
func (s serviceUsage) TopKeys(ctx context.Context, p account.Principal, o account.Organization, from, to time.Time, n int) ([]KeyUsageTotal, error) {
	q := account.UsageQuery{From: from, To: to, Interval: account.IntervalDay}
	buckets, err := s.svc.OrganizationUsageOf(ctx, p, o, q)
	if err != nil {
		return nil, err
	}
	top := account.RankKeys(buckets, n)
	out := make([]KeyUsageTotal, 0, len(top))
	for _, t := range top {
		k, err := s.svc.GetAPIKey(ctx, p, t.KeyID)
		if account.ErrorCode(err) == account.CodeNotFound {
			continue // deleted since it was counted, or one the principal does not see
		}
		if err != nil {
			return nil, err
		}
		buckets, err := s.svc.APIKeyUsageOf(ctx, p, k, q)
		if err != nil {
			return nil, err
		}
		var sum account.UsageCounts
		for _, b := range buckets {
			sum.Add(b.UsageCounts)
		}
		out = append(out, KeyUsageTotal{KeyID: k.ID, Name: k.Name, Verifications: sum.Verifications, TokensIssued: sum.TokensIssued})
	}
	return out, nil
}

func chartBuckets(in []account.UsageBucket) []UsageBucket {
	out := make([]UsageBucket, len(in))
	for i, b := range in {
		out[i] = UsageBucket{Start: b.Start, Verifications: b.Verifications, TokensIssued: b.TokensIssued}
	}
	return out
}
