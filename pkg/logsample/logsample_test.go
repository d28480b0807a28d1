package logsample_test

import (
	"sync"
	"testing"

	"latchkey/pkg/logsample"
)

// TestSampler_Keep: one in N is kept, the first of each N, exactly so
// under concurrent callers; nil and N of 1 keep every line.
func TestSampler_Keep(t *testing.T) {
	t.Run("OneInN", func(t *testing.T) {
		s := logsample.New(100)
		if !s.Keep() {
			t.Fatal("the first line is not kept")
		}
		kept := 1
		for range 999 {
			if s.Keep() {
				kept++
			}
		}
		if kept != 10 || s.Every() != 100 {
			t.Errorf("kept %d of 1000 at every %d, want 10 at 100", kept, s.Every())
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		s := logsample.New(7)
		var mu sync.Mutex
		kept := 0
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for range 700 {
					if s.Keep() {
						mu.Lock()
						kept++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if kept != 1000 {
			t.Errorf("kept %d of 7000 at every 7, want 1000", kept)
		}
	})
	t.Run("All", func(t *testing.T) {
		for _, s := range []*logsample.Sampler{nil, logsample.New(1), logsample.New(0), logsample.New(-5)} {
			for range 10 {
				if !s.Keep() {
					t.Fatalf("%v dropped a line", s)
				}
			}
			if s.Every() != 1 {
				t.Errorf("Every: got %d, want 1", s.Every())
			}
		}
	})
}

func TestParseEvery(t *testing.T) {
	for v, want := range map[string]int{"": 1, "1": 1, " 100 ": 100, "1000000": logsample.MaxEvery} {
		if got, err := logsample.ParseEvery(v); err != nil || got != want {
			t.Errorf("ParseEvery(%q): got %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "1000001", "1.5", "ten", "1e3"} {
		if got, err := logsample.ParseEvery(v); err == nil {
			t.Errorf("ParseEvery(%q): got %d, want an error", v, got)
		}
	}
}
