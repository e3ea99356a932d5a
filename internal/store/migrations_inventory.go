package store

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Inventory area (issue 5): facts, packages, outdated packages, storage
// samples and daily aggregates, the computed traffic light and CVE
// findings. Every table is keyed by server_id and cascades with the server,
// so a decommissioned server leaves nothing behind.

// serverFactsRow is the last refresh of one server: the whole facts.Facts
// as JSON plus the columns the status model and lists read without
// decoding it.
type serverFactsRow struct {
	ServerID        string    `gorm:"primaryKey;size:36"`
	Facts           string    `gorm:"type:text;not null"`
	PackageManager  string    `gorm:"size:16;not null;default:''"`
	Packages        int       `gorm:"not null;default:0"`
	Updates         int       `gorm:"not null;default:0"`
	SecurityUpdates int       `gorm:"not null;default:0"`
	RebootRequired  bool      `gorm:"not null;default:false"`
	RootUsedPercent float64   `gorm:"not null;default:-1"`
	CollectedAt     time.Time `gorm:"not null"`
	// SecuritySince is when security updates were first seen pending
	// without interruption; nil when none are pending.
	SecuritySince *time.Time
	// InventoryDigest is pkgmgr.Inventory.Digest of the stored packages and
	// outdated packages: the next job on the server gets it, and a worker
	// whose fresh inventory has the same digest sends only "unchanged".
	InventoryDigest string    `gorm:"size:64;not null;default:''"`
	Server          serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverFactsRow) TableName() string { return "server_facts" }

// serverPackageRow is the shape of server_packages that migration 001
// created (one row per installed package, all its columns). Migration 004
// clustered it by server, migration 005 replaced it by serverPackageRefRow
// and the package_versions catalog; it stays only because migration 001
// creates the table from it.
type serverPackageRow struct {
	ServerID string    `gorm:"primaryKey;size:36"`
	Name     string    `gorm:"primaryKey;size:255"`
	Arch     string    `gorm:"primaryKey;size:32;default:''"`
	Version  string    `gorm:"primaryKey;size:255"`
	Source   string    `gorm:"size:255;not null;default:''"`
	Manager  string    `gorm:"size:16;not null;default:''"`
	Server   serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverPackageRow) TableName() string { return "server_packages" }

// serverPackageRefRow is one installed package of a server since migration
// 005: a reference into the package_versions catalog, keyed by the
// server's inventory number (inventoryServerRow). The primary key
// (server_num, pkg_id) clusters a server's packages together (WITHOUT
// ROWID on SQLite), a new server's range goes to the end of the B-tree,
// and the key is two integers instead of a 36-character text: a first
// ingest writes one contiguous range of narrow rows. Fleets run the same
// few thousand package versions on every server, so name, arch, version,
// source and manager are stored once per version, not once per server
// (docs/benchmarks.md, "Inventory").
type serverPackageRefRow struct {
	ServerNum int32 `gorm:"primaryKey"`
	PkgID     int32 `gorm:"primaryKey"`
}

func (serverPackageRefRow) TableName() string { return "server_packages" }

// inventoryServerRow numbers the servers that have a package inventory:
// server_packages refers to a server by this small integer.
type inventoryServerRow struct {
	Num      int32
	ServerID string
}

func (inventoryServerRow) TableName() string { return "inventory_servers" }

// packageVersionRow is one package version seen anywhere in the fleet.
// Rows are only added (an ingest inserts the versions it has not seen),
// never changed or deleted, so their ids can be cached in memory
// (packageCatalog). A version no server runs any more simply matches
// nothing.
type packageVersionRow struct {
	ID      int32
	Name    string
	Arch    string
	Version string
	Source  string
	Manager string
}

func (packageVersionRow) TableName() string { return "package_versions" }

// serverOutdatedRow is one package with a newer candidate.
type serverOutdatedRow struct {
	ID        uint64 `gorm:"primaryKey;autoIncrement"`
	ServerID  string `gorm:"size:36;not null;index"`
	Name      string `gorm:"size:255;not null"`
	Arch      string `gorm:"size:32;not null;default:''"`
	Current   string `gorm:"size:255;not null;default:''"`
	Candidate string `gorm:"size:255;not null"`
	Security  bool   `gorm:"not null;default:false"`
	// Held: the package is on hold (apt-mark hold); an upgrade keeps it
	// back until it is released (migration inventory/006).
	Held   bool      `gorm:"not null;default:false"`
	Server serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverOutdatedRow) TableName() string { return "server_outdated" }

// storageSampleRow is one measurement of one mount.
type storageSampleRow struct {
	ID         uint64    `gorm:"primaryKey;autoIncrement"`
	ServerID   string    `gorm:"size:36;not null;index:idx_storage_samples_key,priority:1"`
	Mount      string    `gorm:"size:255;not null;index:idx_storage_samples_key,priority:2"`
	TakenAt    time.Time `gorm:"not null;index:idx_storage_samples_key,priority:3;index"`
	UsedBytes  int64     `gorm:"not null"`
	TotalBytes int64     `gorm:"not null"`
	Server     serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (storageSampleRow) TableName() string { return "storage_samples" }

// storageDailyRow is the daily aggregate of one mount (UTC days).
type storageDailyRow struct {
	ServerID   string    `gorm:"primaryKey;size:36"`
	Mount      string    `gorm:"primaryKey;size:255"`
	Day        string    `gorm:"primaryKey;size:10"` // YYYY-MM-DD, UTC
	AvgUsed    int64     `gorm:"not null"`
	MaxUsed    int64     `gorm:"not null"`
	TotalBytes int64     `gorm:"not null"`
	Samples    int       `gorm:"not null"`
	Server     serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (storageDailyRow) TableName() string { return "storage_daily" }

// storageVolumeRow opts a mount other than "/" into storage history.
type storageVolumeRow struct {
	ServerID string    `gorm:"primaryKey;size:36"`
	Mount    string    `gorm:"primaryKey;size:255"`
	Server   serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (storageVolumeRow) TableName() string { return "storage_volumes" }

// serverStatusRow is the computed traffic light and its reachability input.
type serverStatusRow struct {
	ServerID   string    `gorm:"primaryKey;size:36"`
	Status     string    `gorm:"size:16;not null"`
	Insights   string    `gorm:"type:text;not null"`
	InputsHash string    `gorm:"size:64;not null;default:''"`
	ComputedAt time.Time `gorm:"not null"`
	// Reachability: consecutive failed contacts since the last success.
	FailedContacts   int `gorm:"not null;default:0"`
	UnreachableSince *time.Time
	ContactError     string `gorm:"type:text;not null;default:''"`
	LastContactAt    *time.Time
	Server           serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverStatusRow) TableName() string { return "server_status" }

// serverFindingRow is one vulnerability finding (set by the scanner, or the
// demo seed); the status model reads the highest severity.
type serverFindingRow struct {
	ID       uint64    `gorm:"primaryKey;autoIncrement"`
	ServerID string    `gorm:"size:36;not null;index"`
	CVE      string    `gorm:"column:cve;size:64;not null"`
	Package  string    `gorm:"size:255;not null"`
	Version  string    `gorm:"size:255;not null;default:''"`
	FixedIn  string    `gorm:"size:255;not null;default:''"`
	Severity string    `gorm:"size:16;not null"`
	Server   serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (serverFindingRow) TableName() string { return "server_findings" }

// packageNameRow is the catalog of package names ever ingested: the
// fleet overview pages through it by name (a small table) and checks per
// name whether a visible server has it. Names are only added; a name no
// server has any more simply matches nothing.
type packageNameRow struct {
	Name string `gorm:"primaryKey;size:255"`
}

func (packageNameRow) TableName() string { return "package_names" }

// clusteredPackagesSQL rebuilds server_packages keyed by server. %s is the
// table suffix ("WITHOUT ROWID" on SQLite, "" on PostgreSQL). There is no
// foreign key on purpose: PostgreSQL checks one per inserted row with a
// trigger (about half of a 1,500-package ingest); a trigger on servers
// deletes the rows instead (packagesCascadeSQL), and the ingest locks the
// server row (FOR NO KEY UPDATE) so a concurrent delete cannot leave orphans.
const clusteredPackagesSQL = `CREATE TABLE server_packages_v2 (
	server_id varchar(36) NOT NULL,
	name varchar(255) NOT NULL,
	arch varchar(32) NOT NULL DEFAULT '',
	version varchar(255) NOT NULL,
	source varchar(255) NOT NULL DEFAULT '',
	manager varchar(16) NOT NULL DEFAULT '',
	PRIMARY KEY (server_id, name, arch, version)
) %s`

// packagesCascadeSQL is the ON DELETE CASCADE of server_packages, per
// dialect.
var packagesCascadeSQL = map[string][]string{
	"sqlite": {`CREATE TRIGGER server_packages_cascade AFTER DELETE ON servers
	BEGIN DELETE FROM server_packages WHERE server_id = OLD.id; END`},
	"postgres": {`CREATE OR REPLACE FUNCTION server_packages_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN DELETE FROM server_packages WHERE server_id = OLD.id; RETURN OLD; END $$`,
		`CREATE TRIGGER server_packages_cascade AFTER DELETE ON servers
	FOR EACH ROW EXECUTE FUNCTION server_packages_cascade()`},
}

// migrateClusteredPackages replaces the surrogate-id table (with its
// server_id and name indexes) by the clustered one, keeping the rows
// (duplicates of a key collapse to one) and filling package_names.
func migrateClusteredPackages(tx *gorm.DB) error {
	suffix, insert := "", "INSERT INTO server_packages_v2 (server_id, name, arch, version, source, manager) "+
		"SELECT server_id, name, arch, version, MIN(source), MIN(manager) FROM server_packages GROUP BY server_id, name, arch, version"
	if tx.Dialector.Name() == "sqlite" {
		suffix = "WITHOUT ROWID"
	}
	for _, q := range []string{
		fmt.Sprintf(clusteredPackagesSQL, suffix),
		insert,
		"DROP TABLE server_packages",
		"ALTER TABLE server_packages_v2 RENAME TO server_packages",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	for _, q := range packagesCascadeSQL[tx.Dialector.Name()] {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := tx.AutoMigrate(&packageNameRow{}); err != nil {
		return err
	}
	return tx.Exec("INSERT INTO package_names (name) SELECT DISTINCT name FROM server_packages").Error
}

// packageCatalogSQL creates the package_versions catalog, the
// inventory_servers numbering and the narrow server_packages_v3, per
// dialect. None has a foreign key: the catalog is never deleted from,
// PostgreSQL would check a key per inserted row (see clusteredPackagesSQL),
// and the cascade trigger (packagesCascadeSQL) removes a deleted server's
// rows.
var packageCatalogSQL = map[string][]string{
	"sqlite": {
		`CREATE TABLE package_versions (
	id INTEGER PRIMARY KEY,
	name varchar(255) NOT NULL,
	arch varchar(32) NOT NULL DEFAULT '',
	version varchar(255) NOT NULL,
	source varchar(255) NOT NULL DEFAULT '',
	manager varchar(16) NOT NULL DEFAULT '',
	UNIQUE (name, arch, version, source, manager)
)`,
		`CREATE TABLE inventory_servers (
	num INTEGER PRIMARY KEY,
	server_id varchar(36) NOT NULL UNIQUE
)`,
		`CREATE TABLE server_packages_v3 (
	server_num integer NOT NULL,
	pkg_id integer NOT NULL,
	PRIMARY KEY (server_num, pkg_id)
) WITHOUT ROWID`},
	"postgres": {
		`CREATE TABLE package_versions (
	id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	name varchar(255) NOT NULL,
	arch varchar(32) NOT NULL DEFAULT '',
	version varchar(255) NOT NULL,
	source varchar(255) NOT NULL DEFAULT '',
	manager varchar(16) NOT NULL DEFAULT '',
	UNIQUE (name, arch, version, source, manager)
)`,
		`CREATE TABLE inventory_servers (
	num integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
	server_id varchar(36) NOT NULL UNIQUE
)`,
		`CREATE TABLE server_packages_v3 (
	server_num integer NOT NULL,
	pkg_id integer NOT NULL,
	PRIMARY KEY (server_num, pkg_id)
)`},
}

// packagesCascadeV3SQL is the ON DELETE CASCADE of server_packages and
// inventory_servers since migration 005, per dialect.
var packagesCascadeV3SQL = map[string][]string{
	"sqlite": {`CREATE TRIGGER server_packages_cascade AFTER DELETE ON servers
	BEGIN
		DELETE FROM server_packages WHERE server_num = (SELECT num FROM inventory_servers WHERE server_id = OLD.id);
		DELETE FROM inventory_servers WHERE server_id = OLD.id;
	END`},
	"postgres": {`CREATE OR REPLACE FUNCTION server_packages_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		DELETE FROM server_packages WHERE server_num = (SELECT num FROM inventory_servers WHERE server_id = OLD.id);
		DELETE FROM inventory_servers WHERE server_id = OLD.id;
		RETURN OLD;
	END $$`,
		`CREATE TRIGGER server_packages_cascade AFTER DELETE ON servers
	FOR EACH ROW EXECUTE FUNCTION server_packages_cascade()`},
}

// dropPackagesCascadeSQL removes the cascade trigger while its table is
// rebuilt (SQLite refuses to rename a table over a trigger that names a
// missing one).
var dropPackagesCascadeSQL = map[string]string{
	"sqlite":   `DROP TRIGGER IF EXISTS server_packages_cascade`,
	"postgres": `DROP TRIGGER IF EXISTS server_packages_cascade ON servers`,
}

// migratePackageCatalog moves every distinct (name, arch, version, source,
// manager) of server_packages into package_versions, numbers the servers
// that have packages, and rebuilds server_packages as (server_num,
// pkg_id), keeping every row.
func migratePackageCatalog(tx *gorm.DB) error {
	d := tx.Dialector.Name()
	qs := []string{dropPackagesCascadeSQL[d]}
	qs = append(qs, packageCatalogSQL[d]...)
	qs = append(qs,
		`INSERT INTO package_versions (name, arch, version, source, manager)
	SELECT DISTINCT name, arch, version, source, manager FROM server_packages ORDER BY name, arch, version, source, manager`,
		`INSERT INTO inventory_servers (server_id) SELECT DISTINCT server_id FROM server_packages ORDER BY server_id`,
		`INSERT INTO server_packages_v3 (server_num, pkg_id)
	SELECT i.num, pv.id FROM server_packages sp
	JOIN inventory_servers i ON i.server_id = sp.server_id
	JOIN package_versions pv ON pv.name = sp.name AND pv.arch = sp.arch AND pv.version = sp.version AND pv.source = sp.source AND pv.manager = sp.manager`,
		// The name catalog is complete already; this only makes sure.
		`INSERT INTO package_names (name) SELECT DISTINCT name FROM package_versions WHERE true ON CONFLICT DO NOTHING`,
		"DROP TABLE server_packages",
		"ALTER TABLE server_packages_v3 RENAME TO server_packages",
	)
	qs = append(qs, packagesCascadeV3SQL[d]...)
	for _, q := range qs {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

var inventoryMigrations = []Migration{
	{ID: "inventory/001_facts_packages", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&serverFactsRow{}, &serverPackageRow{}, &serverOutdatedRow{})
	}},
	{ID: "inventory/002_storage", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&storageSampleRow{}, &storageDailyRow{}, &storageVolumeRow{})
	}},
	{ID: "inventory/003_status_findings", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&serverStatusRow{}, &serverFindingRow{})
	}},
	{ID: "inventory/004_clustered_packages", Up: migrateClusteredPackages},
	{ID: "inventory/005_package_catalog", Up: migratePackageCatalog},
	{ID: "inventory/006_outdated_held", Up: func(tx *gorm.DB) error {
		if tx.Migrator().HasColumn(&serverOutdatedRow{}, "Held") { // created by 001 on a fresh database
			return nil
		}
		return tx.Migrator().AddColumn(&serverOutdatedRow{}, "Held")
	}},
	{ID: "inventory/007_server_counters", Up: migrateServerCounters},
	{ID: "inventory/008_inventory_digest", Up: func(tx *gorm.DB) error {
		if tx.Migrator().HasColumn(&serverFactsRow{}, "InventoryDigest") { // created by 001 on a fresh database
			return nil
		}
		return tx.Migrator().AddColumn(&serverFactsRow{}, "InventoryDigest")
	}},
}

// migrateServerCounters fills the servers' update counters from the
// inventory tables: before it, no ingest wrote them, so the server list
// showed 0 updates and no reboot for every server (issue 24).
func migrateServerCounters(tx *gorm.DB) error {
	return tx.Exec(`UPDATE servers SET
	updates_avail = (SELECT COUNT(*) FROM server_outdated o WHERE o.server_id = servers.id),
	security_avail = (SELECT COUNT(*) FROM server_outdated o WHERE o.server_id = servers.id AND o.security = ?),
	reboot_required = COALESCE((SELECT f.reboot_required FROM server_facts f WHERE f.server_id = servers.id), ?)`, true, false).Error
}
