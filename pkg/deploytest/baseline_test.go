package deploytest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"latchkey/pkg/lambdaapp"
	"latchkey/pkg/lambdaapp/replay"
)

// baselineEnv names a binary of the auth function built from another
// commit, as buildFunction builds it:
//
//	git worktree add /tmp/base <commit>
//	(cd /tmp/base && CGO_ENABLED=0 go build -tags lambda.norpc -ldflags='-s -w' -o /tmp/auth-base ./functions/auth)
const baselineEnv = "LATCHKEY_BASELINE_AUTH"

// BenchmarkBaseline compares the auth function built from this tree with
// the baseline binary that LATCHKEY_BASELINE_AUTH names, on the verify
// event of the cold start benchmark, against the same DynamoDB Local and
// moto: b.N cold starts of each, alternated (process start to first
// response, and peak RSS), then, in two processes started once and warmed
// with 50 events each, five blocks of 200 verifies of each, alternated
// (wall and CPU time per invocation). Alternation puts what else the
// machine does on both sides alike; each figure is the median. Skipped
// when the variable is unset.
func BenchmarkBaseline(b *testing.B) {
	base := os.Getenv(baselineEnv)
	if base == "" {
		b.Skip(baselineEnv + " is unset: set it to a baseline build of functions/auth")
	}
	l := newLive(b, true)
	event, err := os.ReadFile(filepath.Join(eventsDir, coldStartEvents[lambdaapp.Auth]))
	if err != nil {
		b.Fatal(err)
	}
	bins := map[string]string{"base": base, "this": buildFunction(b, lambdaapp.Auth)}
	sides := []string{"base", "this"}
	cold, rss := map[string][]float64{}, map[string][]float64{}
	b.ResetTimer()
	for b.Loop() {
		for _, side := range sides {
			elapsed, res, kib := coldStart(b, bins[side], l.env(lambdaapp.Auth), event)
			if res.StatusCode != 200 {
				b.Fatalf("%s: status %d: %s", side, res.StatusCode, res.Body)
			}
			cold[side] = append(cold[side], float64(elapsed.Microseconds())/1000)
			rss[side] = append(rss[side], float64(kib)/1024)
		}
	}
	b.StopTimer()

	ev, err := replay.LoadEvent(filepath.Join(eventsDir, coldStartEvents[lambdaapp.Auth]))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	procs := map[string]*lambdaProcess{}
	invoke := func(side string) {
		var res events.APIGatewayV2HTTPResponse
		if out := procs[side].invoke(raw); json.Unmarshal(out, &res) != nil || res.StatusCode != 200 {
			b.Fatalf("%s: %s", side, out)
		}
	}
	for _, side := range sides {
		procs[side] = startLambda(b, bins[side], l.env(lambdaapp.Auth))
		for range 50 {
			invoke(side)
		}
	}
	const block = 200
	wall, cpu := map[string][]float64{}, map[string][]float64{}
	for range 5 {
		for _, side := range sides {
			pid := procs[side].cmd.Process.Pid
			cpu0, start := processCPU(b, pid), time.Now()
			for range block {
				invoke(side)
			}
			wall[side] = append(wall[side], float64(time.Since(start).Microseconds())/1000/block)
			cpu[side] = append(cpu[side], float64((processCPU(b, pid)-cpu0).Microseconds())/1000/block)
		}
	}
	median := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		return y[len(y)/2]
	}
	for _, side := range sides {
		b.ReportMetric(median(cold[side]), side+"-ms/cold-start")
		b.ReportMetric(median(rss[side]), side+"-MiB-peak-RSS")
		b.ReportMetric(median(wall[side]), side+"-ms/warm-verify")
		b.ReportMetric(median(cpu[side]), side+"-cpu-ms/warm-verify")
	}
	b.ReportMetric(0, "ns/op") // the figures above are the result; b.N counts pairs of cold starts
}
