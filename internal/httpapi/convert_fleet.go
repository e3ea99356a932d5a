package httpapi

import (
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
)

// serverDTO is the contract's Server.
type serverDTO struct {
	ID                 string       `json:"id"`
	Name               string       `json:"name"`
	Host               string       `json:"host"`
	Port               int          `json:"port"`
	Transport          string       `json:"transport"`
	Segment            string       `json:"segment"`
	GroupIDs           []string     `json:"group_ids"`
	Status             string       `json:"status"`
	Insights           []insightDTO `json:"insights"`
	OSName             string       `json:"os_name"`
	OSVersion          string       `json:"os_version"`
	Kernel             string       `json:"kernel"`
	Virtualization     string       `json:"virtualization"`
	Hostname           string       `json:"hostname"`
	RebootRequired     bool         `json:"reboot_required"`
	UpdatesAvailable   int          `json:"updates_available"`
	SecurityUpdates    int          `json:"security_updates"`
	SSHHardened        bool         `json:"ssh_hardened"`
	SSHHardenedAt      *time.Time   `json:"ssh_hardened_at"`
	RootLogin          string       `json:"root_login"`
	RootLoginAt        *time.Time   `json:"root_login_at"`
	SSHProof           []string     `json:"ssh_proof"`
	SudoMode           string       `json:"sudo_mode"`
	SudoModeAt         *time.Time   `json:"sudo_mode_at"`
	PortAt             *time.Time   `json:"port_at"`
	HelperVersion      string       `json:"helper_version"`
	HelperSHA256       string       `json:"helper_sha256"`
	HelperAt           *time.Time   `json:"helper_at"`
	FirewallActive     bool         `json:"firewall_active"`
	FirewallTool       string       `json:"firewall_tool"`
	FirewallAt         *time.Time   `json:"firewall_at"`
	HostKeyFingerprint string       `json:"host_key_fingerprint"`
	Joined             bool         `json:"joined"`
	LastSeenAt         *time.Time   `json:"last_seen_at"`
	CreatedAt          time.Time    `json:"created_at"`
	// Agent is the lcm-agent state of an agent server (absent for SSH).
	Agent *agentDTO `json:"agent,omitempty"`
	// ActiveJobID must stay the last field (serverlist.go splices it).
	ActiveJobID *string `json:"active_job_id"`
}

type insightDTO struct {
	Level string `json:"level"`
	Code  string `json:"code"`
	Text  string `json:"text"`
}

func toServerDTO(s domain.Server) serverDTO {
	d := serverDTO{ID: s.ID, Name: s.Name, Host: s.Host, Port: s.Port, Transport: s.Transport, Segment: s.Segment,
		GroupIDs: strsOrEmpty(s.GroupIDs), Status: string(s.Status), Insights: []insightDTO{}, OSName: s.OSName,
		OSVersion: s.OSVersion, Kernel: s.Kernel, Virtualization: s.Virtualization, Hostname: s.Hostname,
		RebootRequired: s.RebootRequired, UpdatesAvailable: s.UpdatesAvail, SecurityUpdates: s.SecurityAvail,
		SSHHardened: s.SSHHardened, HostKeyFingerprint: s.HostKeyFingerprint, Joined: s.Joined,
		LastSeenAt: s.LastSeenAt, CreatedAt: s.CreatedAt.UTC(),
		SSHHardenedAt: s.Hardening.SSHHardenedAt, RootLogin: s.Hardening.RootLogin, RootLoginAt: s.Hardening.RootLoginAt,
		SSHProof: strsOrEmpty(s.Hardening.SSHProof), SudoMode: s.Hardening.SudoMode, SudoModeAt: s.Hardening.SudoModeAt, Agent: toAgentDTO(s.Agent),
		PortAt: s.Hardening.PortAt, HelperVersion: s.Hardening.HelperVersion, HelperSHA256: s.Hardening.HelperSHA256, HelperAt: s.Hardening.HelperAt,
		FirewallActive: s.Hardening.FirewallActive, FirewallTool: s.Hardening.FirewallTool, FirewallAt: s.Hardening.FirewallAt}
	if d.SudoMode == "" {
		d.SudoMode = domain.SudoFull
	}
	if d.Segment == "" {
		d.Segment = domain.DefaultSegment
	}
	if s.ActiveJobID != "" {
		id := s.ActiveJobID
		d.ActiveJobID = &id
	}
	if s.Agent != nil && s.Agent.LastSeenAt == nil {
		d.Insights = append(d.Insights, insightDTO{Level: "info", Code: "agent_not_enrolled",
			Text: "no agent has connected yet: issue a token and run the install command on the server"})
	}
	if !s.Joined {
		d.Insights = append(d.Insights, insightDTO{Level: "info", Code: "not_joined", Text: "the server has not joined yet"})
	}
	return d
}

type probeRequest struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type probeDTO struct {
	Host              string `json:"host"`
	Port              int    `json:"port"`
	KeyType           string `json:"key_type"`
	FingerprintSHA256 string `json:"fingerprint_sha256"`
	HostKey           string `json:"host_key"`
}

func toProbeDTO(r fleet.ProbeResult) probeDTO {
	return probeDTO{Host: r.Host, Port: r.Port, KeyType: r.KeyType, FingerprintSHA256: r.FingerprintSHA256, HostKey: r.HostKey}
}

type joinRequest struct {
	Name       string   `json:"name"`
	Host       string   `json:"host"`
	Port       int      `json:"port"`
	Username   string   `json:"username"`
	Auth       string   `json:"auth"`
	PrivateKey string   `json:"private_key"`
	Password   string   `json:"password"`
	HostKey    string   `json:"host_key"`
	GroupIDs   []string `json:"group_ids"`
	Segment    string   `json:"segment"`
}

// jobStartedDTO is the answer of every endpoint that starts a job.
// job_name is the job's human name (domain.JobName), kind its machine
// kind (the job_name filter of the history takes a kind).
type jobStartedDTO struct {
	Status  string `json:"status"`
	JobID   string `json:"job_id"`
	JobName string `json:"job_name"`
	Kind    string `json:"kind"`
}

func toJobStarted(j domain.Job) jobStartedDTO {
	return jobStartedDTO{Status: string(domain.JobStarted), JobID: j.ID, JobName: j.Name(), Kind: string(j.Kind)}
}

type joinDTO struct {
	jobStartedDTO
	Server serverDTO `json:"server"`
}

// blockedDTO is the 409 answer for a busy server.
type blockedDTO struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Code   string `json:"code"`
	JobID  string `json:"job_id,omitempty"`
}

type serverSettingsRequest struct {
	Name    *string `json:"name"`
	Port    *int    `json:"port"`
	Segment *string `json:"segment"`
}

type groupDTO struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Segment     string    `json:"segment"`
	ServerIDs   []string  `json:"server_ids"`
	ManagerIDs  []string  `json:"manager_ids"`
	CreatedAt   time.Time `json:"created_at"`
}

func toGroupDTO(g domain.Group) groupDTO {
	return groupDTO{ID: g.ID, Name: g.Name, Description: g.Description, Segment: g.Segment,
		ServerIDs: strsOrEmpty(g.ServerIDs), ManagerIDs: strsOrEmpty(g.ManagerIDs), CreatedAt: g.CreatedAt.UTC()}
}

type groupRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	Segment     *string `json:"segment"`
}

type groupServerRequest struct {
	ServerID string `json:"server_id"`
}

type groupManagerRequest struct {
	UserID string `json:"user_id"`
}

// jobDTO is the contract's Job.
type jobDTO struct {
	JobID       string     `json:"job_id"`
	JobName     string     `json:"job_name"`
	Kind        string     `json:"kind"`
	ServerID    string     `json:"server_id"`
	ServerName  string     `json:"server_name"`
	Status      string     `json:"status"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	ExitCode    *int       `json:"exit_code"`
	Error       string     `json:"error"`
	OutputBytes int64      `json:"output_bytes"`
}

func toJobDTO(j domain.Job) jobDTO {
	return jobDTO{JobID: j.ID, JobName: j.Name(), Kind: string(j.Kind), ServerID: j.ServerID, ServerName: j.ServerName,
		Status: string(j.Status), CreatedBy: j.CreatedBy, CreatedAt: j.CreatedAt.UTC(), StartedAt: j.StartedAt,
		FinishedAt: j.FinishedAt, ExitCode: j.ExitCode, Error: j.Error, OutputBytes: j.OutputBytes}
}

type jobPageDTO struct {
	Items []jobDTO `json:"items"`
	Total int64    `json:"total"`
}

type jobFilterOptionsDTO struct {
	Statuses []string `json:"statuses"`
	JobNames []string `json:"job_names"`
}

type sshOutputDTO struct {
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
	Output   string `json:"output"`
	Offset   int64  `json:"offset"`
	Complete bool   `json:"complete"`
}

func toSSHOutputDTO(o domain.JobOutput) sshOutputDTO {
	return sshOutputDTO{JobID: o.JobID, Status: string(o.Status), Output: string(o.Output), Offset: o.Offset, Complete: o.Complete}
}

// outputEventDTO is the data of an SSE "output" event.
type outputEventDTO struct {
	Seq    int64  `json:"seq"`
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
}
