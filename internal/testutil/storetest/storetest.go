// Package storetest opens a migrated, keyed store for tests of the
// packages above the store (the store's own tests cannot import it: they
// are in package store).
package storetest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/lcmproject/lcm/internal/store"
)

// Open opens the database at url (testutil.Databases; "" is SQLite) with
// its data directory in t.TempDir(), migrates it and sets the master key
// the directory then holds. The store is closed when t ends.
func Open(t testing.TB, url string) *store.Store {
	t.Helper()
	return OpenIn(t, url, t.TempDir())
}

// OpenIn is Open with the data directory dir (for tests that put more
// there, such as an embedded NATS server).
func OpenIn(t testing.TB, url, dir string) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: url, DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kr, _, err := st.ResolveMasterKey(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetKeyring(kr)
	return st
}
