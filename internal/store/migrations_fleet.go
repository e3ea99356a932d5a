package store

import (
	"time"

	"gorm.io/gorm"
)

// serverRow is one managed server. Name and host are encrypted (the name
// also has a blind index for exact, case-insensitive lookups); every key and
// password is encrypted and registered for rotate-db-key.
type serverRow struct {
	ID        string `gorm:"primaryKey;size:36"`
	Name      string `gorm:"column:name;serializer:secret;type:bytes"`
	NameBidx  string `gorm:"column:name_bidx;size:64;not null;uniqueIndex"`
	Host      string `gorm:"column:host;serializer:secret;type:bytes"`
	Port      int    `gorm:"not null"`
	Transport string `gorm:"size:16;not null"`
	// Segment is the server's own worker segment; "" takes its group's.
	Segment    string `gorm:"size:64;not null;default:''"`
	Status     string `gorm:"size:16;not null"`
	Joined     bool   `gorm:"not null;default:false"`
	AuthMethod string `gorm:"size:16;not null"`
	// Username is the management user (domain.ManagementUser after join).
	Username string `gorm:"size:64;not null"`
	// PrivateKey is the management key (OpenSSH PEM); PendingKey is a key
	// generated for a running join or rotation, promoted once proven.
	PrivateKey string `gorm:"column:private_key;serializer:secret;type:bytes"`
	PendingKey string `gorm:"column:pending_key;serializer:secret;type:bytes"`
	// LoginPassword is kept for devices with password authentication.
	LoginPassword string `gorm:"column:login_password;serializer:secret;type:bytes"`
	// Bootstrap credentials are used by join only and wiped once it succeeds.
	BootstrapUser     string `gorm:"size:64;not null;default:''"`
	BootstrapKey      string `gorm:"column:bootstrap_key;serializer:secret;type:bytes"`
	BootstrapPassword string `gorm:"column:bootstrap_password;serializer:secret;type:bytes"`
	HostKey           string `gorm:"type:text;not null"`
	HostKeyFP         string `gorm:"column:host_key_fp;size:128;not null"`
	// CredVersion changes with every credential change so worker
	// connection pools never reuse a connection made with old credentials.
	CredVersion    int64  `gorm:"not null;default:1"`
	OSName         string `gorm:"size:128"`
	OSVersion      string `gorm:"size:64"`
	Kernel         string `gorm:"size:128"`
	Virtualization string `gorm:"size:64"`
	Hostname       string `gorm:"size:255"`
	PkgFamily      string `gorm:"size:16"`
	RebootRequired bool
	UpdatesAvail   int
	SecurityAvail  int
	SSHHardened    bool `gorm:"column:ssh_hardened"`
	// Hardening state, each value with the time it was last proven on
	// the server (fleet/004_hardening).
	SSHHardenedAt *time.Time `gorm:"column:ssh_hardened_at"`
	RootLogin     string     `gorm:"column:root_login;size:32;not null;default:''"`
	RootLoginAt   *time.Time `gorm:"column:root_login_at"`
	SSHProof      string     `gorm:"column:ssh_proof;type:text;not null;default:''"`
	SudoMode      string     `gorm:"column:sudo_mode;size:16;not null;default:'full'"`
	SudoModeAt    *time.Time `gorm:"column:sudo_mode_at"`
	// The SSH port's last proof and the helper as last read back
	// (fleet/006_helper_port_proof).
	PortAt        *time.Time `gorm:"column:port_at"`
	HelperVersion string     `gorm:"column:helper_version;size:128;not null;default:''"`
	HelperSHA256  string     `gorm:"column:helper_sha256;size:64;not null;default:''"`
	HelperAt      *time.Time `gorm:"column:helper_at"`
	// Firewall state as last read back (firewall/001_tables).
	FirewallActive bool       `gorm:"column:firewall_active;not null;default:false"`
	FirewallTool   string     `gorm:"column:firewall_tool;size:16;not null;default:''"`
	FirewallAt     *time.Time `gorm:"column:firewall_at"`
	LastSeenAt     *time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func (serverRow) TableName() string { return "servers" }

type groupRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	Name        string `gorm:"size:128;not null;uniqueIndex"`
	Description string `gorm:"size:1024"`
	Segment     string `gorm:"size:64;not null;default:''"`
	CreatedAt   time.Time
}

func (groupRow) TableName() string { return "server_groups" }

type groupServerRow struct {
	GroupID  string    `gorm:"primaryKey;size:36"`
	ServerID string    `gorm:"primaryKey;size:36;index"`
	Group    groupRow  `gorm:"foreignKey:GroupID;constraint:OnDelete:CASCADE"`
	Server   serverRow `gorm:"foreignKey:ServerID;constraint:OnDelete:CASCADE"`
}

func (groupServerRow) TableName() string { return "group_servers" }

type groupManagerRow struct {
	GroupID string   `gorm:"primaryKey;size:36"`
	UserID  string   `gorm:"primaryKey;size:36;index"`
	Group   groupRow `gorm:"foreignKey:GroupID;constraint:OnDelete:CASCADE"`
	User    userRow  `gorm:"foreignKey:UserID;constraint:OnDelete:CASCADE"`
}

func (groupManagerRow) TableName() string { return "group_managers" }

// jobRow is one job. It keeps no foreign key to servers: the history of a
// decommissioned server stays readable.
type jobRow struct {
	ID             string    `gorm:"primaryKey;size:36"`
	Kind           string    `gorm:"size:32;not null;index"`
	ServerID       string    `gorm:"size:36;not null;index"`
	Segment        string    `gorm:"size:64;not null"`
	Status         string    `gorm:"size:16;not null;index"`
	WorkerID       string    `gorm:"size:128;not null;default:''"`
	CreatedBy      string    `gorm:"size:36;not null;default:''"`
	CreatedAt      time.Time `gorm:"index"`
	StartedAt      *time.Time
	FinishedAt     *time.Time
	HeartbeatAt    *time.Time
	ExitCode       *int
	Error          string `gorm:"type:text;not null;default:''"`
	OutputBytes    int64  `gorm:"not null;default:0"`
	Params         string `gorm:"type:text;not null;default:''"`
	Result         string `gorm:"type:text;not null;default:''"`
	AbortRequested bool   `gorm:"not null;default:false"`
	// StateSeq is the sequence number of the last state report applied,
	// FinalBy who decided the final state (domain.FinalSource), so a
	// worker's late final replaces the control plane's verdict only
	// (fleet/006).
	StateSeq int64  `gorm:"not null;default:0"`
	FinalBy  string `gorm:"size:16;not null;default:''"`
}

func (jobRow) TableName() string { return "jobs" }

// jobOutputRow is one console output chunk, encrypted. The unique
// (job_id, seq) makes a redelivered chunk an insert-or-ignore no-op.
// ID is "<job_id>/<seq, 12 digits>": a single-column key, as rotate-db-key
// addresses rows by one column.
type jobOutputRow struct {
	ID    string `gorm:"primaryKey;size:64"`
	JobID string `gorm:"size:36;not null;uniqueIndex:idx_job_output_seq,priority:1"`
	Seq   int64  `gorm:"not null;uniqueIndex:idx_job_output_seq,priority:2"`
	Off   int64  `gorm:"column:off;not null"`
	Size  int    `gorm:"not null"`
	Data  []byte `gorm:"not null"`
	Job   jobRow `gorm:"foreignKey:JobID;constraint:OnDelete:CASCADE"`
}

func (jobOutputRow) TableName() string { return "job_output" }

var fleetMigrations = []Migration{
	{ID: "fleet/001_servers_groups", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&serverRow{}, &groupRow{}, &groupServerRow{}, &groupManagerRow{})
	}},
	{ID: "fleet/002_jobs", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&jobRow{}, &jobOutputRow{})
	}},
	bulkMigration, // fleet/003_bulk_runs (bulk.go)
	{ID: "fleet/004_hardening", Up: migrateHardening},
	{ID: "fleet/005_server_agents", Up: func(tx *gorm.DB) error {
		return tx.AutoMigrate(&agentRow{})
	}},
	{ID: "fleet/006_helper_port_proof", Up: func(tx *gorm.DB) error { return addServerColumns(tx, helperPortColumns) }},
	{ID: "fleet/007_agent_gateway", Up: func(tx *gorm.DB) error {
		// On a fresh database fleet/005 created them already.
		for _, c := range []string{"Gateway", "Capability"} {
			if tx.Migrator().HasColumn(&agentRow{}, c) {
				continue
			}
			if err := tx.Migrator().AddColumn(&agentRow{}, c); err != nil {
				return err
			}
		}
		return nil
	}},
	{ID: "fleet/008_bulk_action_size", Up: func(tx *gorm.DB) error {
		// bulk_runs.action was varchar(32), too short for the action of a
		// rollout of a custom action or a run of a long-named custom
		// action. SQLite does not enforce the size.
		if tx.Dialector.Name() == "sqlite" {
			return nil
		}
		return tx.Exec("ALTER TABLE bulk_runs ALTER COLUMN action TYPE varchar(200)").Error
	}},
	{ID: "fleet/009_job_state_seq", Up: func(tx *gorm.DB) error {
		// On a fresh database fleet/002 created them already.
		for _, c := range []string{"StateSeq", "FinalBy"} {
			if tx.Migrator().HasColumn(&jobRow{}, c) {
				continue
			}
			if err := tx.Migrator().AddColumn(&jobRow{}, c); err != nil {
				return err
			}
		}
		return nil
	}},
}

// Encrypted columns of the fleet area.
var (
	colServerName = EncryptedColumn{Table: "servers", Column: "name", PK: "id", BlindColumn: "name_bidx"}
	colServerHost = EncryptedColumn{Table: "servers", Column: "host", PK: "id"}
	colJobOutput  = EncryptedColumn{Table: "job_output", Column: "data", PK: "id"}
)

func init() {
	registerEncrypted(colServerName)
	registerEncrypted(colServerHost)
	for _, c := range []string{"private_key", "pending_key", "login_password", "bootstrap_key", "bootstrap_password"} {
		registerEncrypted(EncryptedColumn{Table: "servers", Column: c, PK: "id"})
	}
	registerEncrypted(colJobOutput)
}

// hardeningColumns are the server columns fleet/004_hardening adds (on a
// fresh database fleet/001 created them already from serverRow).
var hardeningColumns = []string{"SSHHardenedAt", "RootLogin", "RootLoginAt", "SSHProof", "SudoMode", "SudoModeAt"}

// helperPortColumns are the server columns fleet/006_helper_port_proof
// adds.
var helperPortColumns = []string{"PortAt", "HelperVersion", "HelperSHA256", "HelperAt"}

func migrateHardening(tx *gorm.DB) error { return addServerColumns(tx, hardeningColumns) }

// addServerColumns adds the server columns that are missing (on a fresh
// database fleet/001 created them already from serverRow).
func addServerColumns(tx *gorm.DB, cols []string) error {
	for _, c := range cols {
		if tx.Migrator().HasColumn(&serverRow{}, c) {
			continue
		}
		if err := tx.Migrator().AddColumn(&serverRow{}, c); err != nil {
			return err
		}
	}
	return nil
}
