package boltstore

// SetSweepMax sets how many items one sweeping transaction may delete.
func SetSweepMax(t *Table, n int) { t.sweepMax = n }

// Exported for the codec's tests.
var (
	AppendItem = appendItem
	DecodeItem = decodeItem
)

// TableKey is the bbolt key of an item with hash h and range r.
func TableKey(h, r []byte) []byte { return appendKeyPartOf(appendKeyPartOf(nil, h), r) }

// CutKeyPart is cutKeyPart.
var CutKeyPart = cutKeyPart
