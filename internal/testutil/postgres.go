package testutil

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// DefaultPostgresAdminURL is the CI machine's PostgreSQL (trust auth).
const DefaultPostgresAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PostgresURL creates a fresh, empty database for this test on the PostgreSQL
// named by LCM_TEST_POSTGRES_URL (default DefaultPostgresAdminURL) and drops
// it when the test ends. It marks the test unavailable when PostgreSQL
// cannot be reached.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("LCM_TEST_POSTGRES_URL")
	if admin == "" {
		admin = DefaultPostgresAdminURL
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		Unavailable(t, "PostgreSQL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		Unavailable(t, "PostgreSQL at %s: %v", redact(admin), err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "lcm_test_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		db.Close()
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "?"
	}
	return p.Redacted()
}

// DB names a database backend for table tests: URL "" means SQLite.
type DB struct {
	Name string
	URL  string
}

// Databases returns SQLite and a fresh PostgreSQL database, so a test runs
// against both. Set LCM_TEST_DATABASES=sqlite to run SQLite only locally
// (never in CI).
func Databases(t testing.TB) []DB {
	t.Helper()
	dbs := []DB{{Name: "sqlite"}}
	if os.Getenv("LCM_TEST_DATABASES") == "sqlite" && !InCI() {
		return dbs
	}
	return append(dbs, DB{Name: "postgres", URL: PostgresURL(t)})
}
