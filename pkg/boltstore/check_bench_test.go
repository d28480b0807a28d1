package boltstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"latchkey/pkg/boltstore"
	"latchkey/pkg/tablestore"
)

// BenchmarkOpen_FileCheck measures Open of a big file with its check and
// without (SkipFileCheck): the difference is the check. The file holds
// API key records written through the table's own write path, up to
// LATCHKEY_BENCH_FILE_MB megabytes (64 by default; docs/configuration.md
// quotes 1024). The file stays in the page cache: this is a warm start.
func BenchmarkOpen_FileCheck(b *testing.B) {
	mb := 64
	if v := os.Getenv("LATCHKEY_BENCH_FILE_MB"); v != "" {
		var err error
		if mb, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(b.TempDir(), "latchkey.db")
	t, err := boltstore.OpenTable(path, boltstore.WithTTL(tablestore.TTLAttribute), boltstore.WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		if fi.Size() >= int64(mb)<<20 {
			break
		}
		items := make([]tablestore.Item, 10000)
		for i := range items {
			items[i] = benchItem(fmt.Sprintf("KEY#%012d", n))
			items[i]["gsi1sk"] = tablestore.S(fmt.Sprintf("%012d", n))
			n++
		}
		if err := boltstore.PutItemsAtOnce(t, items); err != nil {
			b.Fatal(err)
		}
	}
	if err := t.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("%d items, %d MiB", n, fi.Size()>>20)
	for _, c := range []struct {
		name string
		opts []boltstore.OpenOption
	}{{"Checked", nil}, {"SkipFileCheck", []boltstore.OpenOption{boltstore.SkipFileCheck()}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := boltstore.Open(path, c.opts...)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
