package storetest

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"latchkey/pkg/account"
)

// analytics checks AddUsage and ReadUsage: a flush adds exactly once
// however often it is retried, processes add to the same bucket apart
// and concurrently, and a read sums them in time order within its range.
func (s suite) analytics(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	delta := func(subject string, start time.Time, valid, revoked int64) account.UsageDelta {
		return account.UsageDelta{
			Subject: subject, Interval: account.IntervalMinute, Start: start, ExpireAt: start.Add(48 * time.Hour),
			Counts: account.UsageCounts{Verifications: map[string]int64{account.OutcomeValid: valid, account.ReasonRevoked: revoked}, TokensIssued: 1},
		}
	}
	t.Run("Retried", func(t *testing.T) {
		f := s.fix(t)
		flush := account.UsageFlush{Process: "p1", Seq: 1, Deltas: []account.UsageDelta{delta("key_a", base, 5, 2)}}
		for range 3 {
			if err := f.s.AddUsage(f.ctx, flush); err != nil {
				t.Fatal(err)
			}
		}
		// An older flush retried late is skipped too; the next one adds.
		if err := f.s.AddUsage(f.ctx, account.UsageFlush{Process: "p1", Seq: 2, Deltas: []account.UsageDelta{delta("key_a", base, 1, 0)}}); err != nil {
			t.Fatal(err)
		}
		if err := f.s.AddUsage(f.ctx, flush); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.ReadUsage(f.ctx, "key_a", account.IntervalMinute, base, base.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		want := []account.UsageBucket{{Start: base, UsageCounts: account.UsageCounts{Verifications: map[string]int64{"valid": 6, "revoked": 2}, TokensIssued: 2}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("ConcurrentProcesses", func(t *testing.T) {
		// 20 processes flush 10 times each into the same bucket at once.
		f := s.fix(t)
		var wg sync.WaitGroup
		for p := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := range int64(10) {
					fl := account.UsageFlush{Process: string(rune('a' + p)), Seq: seq + 1, Deltas: []account.UsageDelta{delta("org_x", base, 1, 1)}}
					if err := f.s.AddUsage(f.ctx, fl); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		got, err := f.s.ReadUsage(f.ctx, "org_x", account.IntervalMinute, base, base.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Verifications["valid"] != 200 || got[0].Verifications["revoked"] != 200 || got[0].TokensIssued != 200 {
			t.Errorf("got %+v, want 200 of each", got)
		}
	})
	t.Run("Range", func(t *testing.T) {
		f := s.fix(t)
		fl := account.UsageFlush{Process: "p", Seq: 1}
		for i := range 5 {
			fl.Deltas = append(fl.Deltas, delta("key_r", base.Add(time.Duration(i)*time.Minute), int64(i+1), 0))
		}
		org := delta("org_r", base, 1, 0)
		org.Counts.Keys = map[string]int64{"key_r": 1}
		hour := delta("key_r", base, 100, 0)
		hour.Interval = account.IntervalHour
		fl.Deltas = append(fl.Deltas, org, hour)
		if err := f.s.AddUsage(f.ctx, fl); err != nil {
			t.Fatal(err)
		}
		// [base+1m, base+3m30s): the buckets of minutes 1, 2 and 3.
		got, err := f.s.ReadUsage(f.ctx, "key_r", account.IntervalMinute, base.Add(time.Minute), base.Add(3*time.Minute+30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var starts []time.Time
		var valid []int64
		for _, b := range got {
			starts, valid = append(starts, b.Start), append(valid, b.Verifications["valid"])
		}
		wantStarts := []time.Time{base.Add(time.Minute), base.Add(2 * time.Minute), base.Add(3 * time.Minute)}
		if !reflect.DeepEqual(starts, wantStarts) || !reflect.DeepEqual(valid, []int64{2, 3, 4}) {
			t.Errorf("got starts %v valid %v, want %v [2 3 4]", starts, valid, wantStarts)
		}
		got, err = f.s.ReadUsage(f.ctx, "org_r", account.IntervalMinute, base, base.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Keys["key_r"] != 1 {
			t.Errorf("organization: got %+v, want key_r: 1", got)
		}
		got, err = f.s.ReadUsage(f.ctx, "key_r", account.IntervalHour, base, base.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Verifications["valid"] != 100 {
			t.Errorf("hour: got %+v, want valid 100", got)
		}
		got, err = f.s.ReadUsage(f.ctx, "key_none", account.IntervalMinute, base, base.Add(time.Hour))
		if err != nil || len(got) != 0 {
			t.Errorf("no usage: got %+v, %v, want none", got, err)
		}
	})
}
