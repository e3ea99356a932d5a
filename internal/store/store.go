// Package store is LCM's one persistence layer: GORM over embedded SQLite
// (default) or PostgreSQL, versioned migrations, encrypted columns and the
// master-key binding. Services call store methods; nothing outside this
// package imports gorm.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/secret"
)

// SQLiteFileName is the embedded database in the data dir.
const SQLiteFileName = "lcm.db"

// sqliteBusyTimeout lets concurrent writers wait for the single SQLite writer
// lock instead of failing with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// Dialect names the database family.
type Dialect string

// Supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is the handle every area's store methods hang off.
type Store struct {
	db      *gorm.DB
	kr      *secret.Keyring
	dialect Dialect
	log     *slog.Logger
	changes *changes
	// pkgs caches the package catalog's ids (inventory ingest). Only the
	// root store has it: InTx's stores do not, so nothing a transaction
	// that may still roll back wrote can enter the cache.
	pkgs *packageCatalog
	// writers queues SQLite's transactions in this process (nil on
	// PostgreSQL): SQLite has one writer, and a transaction that finds the
	// lock taken sleeps in SQLite's busy handler for up to 100 ms between
	// tries, so under load a claim or a short write waited behind the
	// sleeps, not behind the work. Waiting here wakes the next writer the
	// moment the lock is free. inTx marks a store bound to a transaction.
	writers chan struct{}
	inTx    bool
}

// Options selects and tunes the database.
type Options struct {
	// URL is a postgres:// URL; empty means SQLite in DataDir.
	URL     string
	DataDir string
	Logger  *slog.Logger
}

// Open connects to the database. It does not migrate; call Migrate.
func Open(ctx context.Context, o Options) (*Store, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	gcfg := &gorm.Config{
		// Never let GORM log SQL: statements can carry secrets.
		Logger:                                   logger.Discard,
		DisableForeignKeyConstraintWhenMigrating: false,
		TranslateError:                           true,
		NowFunc:                                  func() time.Time { return time.Now().UTC() },
	}
	var (
		db      *gorm.DB
		err     error
		dialect Dialect
	)
	if o.URL != "" {
		dialect = Postgres
		db, err = gorm.Open(postgres.Open(o.URL), gcfg)
	} else {
		dialect = SQLite
		if err := checkWritableDir(o.DataDir); err != nil {
			return nil, err
		}
		path := filepath.Join(o.DataDir, SQLiteFileName)
		dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate",
			path, sqliteBusyTimeout.Milliseconds())
		db, err = gorm.Open(sqlite.Open(dsn), gcfg)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	if dialect == Postgres {
		sqlDB.SetMaxOpenConns(32)
		sqlDB.SetMaxIdleConns(8)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	} else {
		// One writer at a time is SQLite's nature; a small pool of
		// connections still lets WAL readers run beside the writer.
		sqlDB.SetMaxOpenConns(8)
		sqlDB.SetMaxIdleConns(8)
		// An idle connection keeps its page cache (up to 2 MiB) and
		// statement cache in the driver's own memory; closing it after a
		// minute unused hands that back once a fleet-wide run is over.
		sqlDB.SetConnMaxIdleTime(time.Minute)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", dialect, err)
	}
	if dialect == SQLite {
		// Verify the pragmas took effect rather than trusting the DSN.
		var mode string
		if err := sqlDB.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
			sqlDB.Close()
			return nil, fmt.Errorf("store: SQLite WAL mode not active (got %q): %v", mode, err)
		}
	}
	ch := &changes{}
	if err := ch.register(db); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: change tracking: %w", err)
	}
	st := &Store{db: db, dialect: dialect, log: log, changes: ch, pkgs: newPackageCatalog()}
	if dialect == SQLite {
		st.writers = make(chan struct{}, 1)
	}
	return st, nil
}

func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: data dir %s cannot be created: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".writetest-*")
	if err != nil {
		return fmt.Errorf("store: data dir %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Dialect reports the database family.
func (s *Store) Dialect() Dialect { return s.dialect }

// Keyring returns the master keyring bound to this database.
func (s *Store) Keyring() *secret.Keyring { return s.kr }

// SetKeyring attaches the master keyring (after ResolveMasterKey).
func (s *Store) SetKeyring(k *secret.Keyring) { s.kr = k }

// conn returns a session bound to ctx with the keyring attached, so the
// "secret" serializer can encrypt and decrypt.
func (s *Store) conn(ctx context.Context) *gorm.DB {
	if s.kr != nil {
		ctx = secret.WithKeyring(ctx, s.kr)
	}
	return s.db.WithContext(ctx)
}

// InTx runs fn in one transaction; fn's store is bound to the transaction.
// An error or panic in fn rolls everything back.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.writers != nil && !s.inTx {
		// A writer that cannot get in within the busy timeout goes on to
		// SQLite's own waiting, as it did before this queue (a transaction
		// opened on the root store inside another would otherwise wait for
		// itself).
		t := time.NewTimer(sqliteBusyTimeout)
		select {
		case s.writers <- struct{}{}:
			t.Stop()
			defer func() { <-s.writers }()
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	var (
		pool                 gorm.ConnPool
		tc                   *txChanges
		outermost, committed bool
	)
	defer func() { // also after a panic in fn, which GORM re-raises
		if outermost {
			s.changes.end(pool, tc, committed)
		}
	}()
	err := s.conn(ctx).Transaction(func(gtx *gorm.DB) error {
		pool = gtx.Statement.ConnPool
		tc, outermost = s.changes.begin(pool)
		return fn(&Store{db: gtx, kr: s.kr, dialect: s.dialect, log: s.log, changes: s.changes, writers: s.writers, inTx: true})
	})
	committed = err == nil
	return txErr(err)
}

// txErr maps what the transaction itself reports (its begin or commit:
// SQLite reports a full disk at the commit) the way mapErr maps a
// statement's error, so a client learns "storage_full" instead of an
// internal error. fn's own errors pass unchanged.
func txErr(err error) error {
	var de *domain.Error
	if err == nil || errors.As(err, &de) {
		return err
	}
	if isStorageFull(err) || isConnectFailure(err) || errors.Is(err, context.DeadlineExceeded) {
		return mapErr(err, "transaction")
	}
	return err
}

// Ping checks the database connection (health).
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// SQL returns the underlying *sql.DB (for benchmarks and low-level tools).
func (s *Store) SQL() (*sql.DB, error) { return s.db.DB() }

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if s.dialect == SQLite {
		// Fold the WAL back into the main file so a copied lcm.db is complete.
		_, _ = sqlDB.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return sqlDB.Close()
}

// mapErr turns GORM errors into domain categories.
func mapErr(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.NotFound(what)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return domain.Conflict("duplicate", what+" already exists")
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return domain.Conflict("in_use", what+" is referenced by other data")
	case isDataException(err):
		return domain.Invalid("invalid_value", what+": a value in the request cannot be stored or compared (for example a NUL byte in a text)")
	// Unavailability keeps its cause in the error text (for the log); the
	// client sees the domain error's message only.
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (store: %s: %v)", domain.Unavailable("request_timeout",
			"the database did not answer within the request's deadline; try again"), what, err)
	case isStorageFull(err):
		return fmt.Errorf("%w (store: %s: %v)", domain.Unavailable("storage_full",
			"the database's disk is full: nothing was written; free space and try again"), what, err)
	case isConnectFailure(err):
		return fmt.Errorf("%w (store: %s: %v)", domain.Unavailable("database_unavailable",
			"the database cannot be reached; try again shortly"), what, err)
	default:
		return fmt.Errorf("store: %s: %w", what, err)
	}
}

// isStorageFull reports a database that cannot write for lack of space:
// SQLite's SQLITE_FULL ("database or disk is full") or an I/O error from
// ENOSPC, PostgreSQL's class 53 ("insufficient resources": disk full, out
// of memory).
func isStorageFull(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "53")
	}
	msg := err.Error()
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "database or disk is full") ||
		strings.Contains(msg, "no space left on device")
}

// isConnectFailure reports a PostgreSQL server that cannot be reached (no
// connection could be made), as opposed to a query that failed.
func isConnectFailure(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// isDataException reports PostgreSQL's class 22 errors ("data exception":
// a NUL byte or invalid UTF-8 in a text parameter, a number out of range).
// Values reach the database only from requests, so they are the client's
// error, not the server's; SQLite stores or compares the same values
// without complaint.
func isDataException(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && strings.HasPrefix(pg.Code, "22")
}
