package boltstore

// SetBeforeCommit installs a hook that runs in the transaction of every
// write that commits an idempotency record, after the change and the
// record are written and before the commit: an error it returns is a fault
// between the two, which must leave neither.
func (s *Store) SetBeforeCommit(fn func() error) { s.beforeCommit = fn }
