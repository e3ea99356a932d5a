// Package containers is the container vocabulary of LCM (issue 15): the
// containers, images and compose projects a server runs under Docker or
// Podman, and the pure parsers that read them from the engines' own JSON
// output (`ps -a --format json`, `images --format json`, `inspect`). Both
// engines may exist on one server; every entity names its engine.
//
// The package imports the standard library only: actions run the commands
// and hand the output here, the service stores what comes back.
package containers

import (
	"context"
	"time"
)

// Engine names a container engine.
type Engine string

// Engines LCM reads.
const (
	Docker Engine = "docker"
	Podman Engine = "podman"
)

// Valid reports whether e is a known engine.
func (e Engine) Valid() bool { return e == Docker || e == Podman }

// String returns the wire value.
func (e Engine) String() string { return string(e) }

// Update states of an image or container. "not_checked" is the state
// whenever no checker ran: nothing is ever "up_to_date" unless checked.
const (
	UpdateNotChecked = "not_checked"
	UpdateUpToDate   = "up_to_date"
	UpdateAvailable  = "update_available"
	UpdateCheckError = "check_failed"
)

// Port is one published port.
type Port struct {
	HostIP        string `json:"host_ip,omitempty"`
	HostPort      int    `json:"host_port,omitempty"`
	ContainerPort int    `json:"container_port"`
	Protocol      string `json:"protocol"`
}

// Container is one container of one engine.
type Container struct {
	Engine         Engine     `json:"engine"`
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	Image          string     `json:"image"`
	ImageID        string     `json:"image_id,omitempty"`
	ImageDigest    string     `json:"image_digest,omitempty"`
	State          string     `json:"state"`
	Status         string     `json:"status,omitempty"`
	Health         string     `json:"health,omitempty"`
	RestartCount   int        `json:"restart_count"`
	Ports          []Port     `json:"ports"`
	ComposeProject string     `json:"compose_project,omitempty"`
	ComposeService string     `json:"compose_service,omitempty"`
	CreatedAt      *time.Time `json:"created_at,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	// Update is one of the Update* states; CVERelevant is the operator's
	// mark (stored apart from the inventory, merged in by the service).
	Update      string `json:"update"`
	CVERelevant bool   `json:"cve_relevant"`

	labels map[string]string
}

// Image is one repository:tag of one engine (an untagged image is one
// entry with Repository and Tag "<none>").
type Image struct {
	Engine     Engine `json:"engine"`
	ID         string `json:"id"`
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest,omitempty"`
	// Digests are every manifest digest the engine knows for this
	// repository's image (podman's RepoDigests): an image pulled from a
	// registry after it was built or imported locally keeps the local
	// manifest as Digest and lists the registry's here.
	Digests    []string `json:"digests,omitempty"`
	Size       int64    `json:"size"`
	InUse      bool     `json:"in_use"`
	Dangling   bool     `json:"dangling"`
	Containers int      `json:"containers"`
	Update     string   `json:"update"`
}

// Ref is repository:tag, or the id when untagged.
func (im Image) Ref() string {
	if im.Dangling || im.Repository == "" || im.Repository == "<none>" {
		return im.ID
	}
	return im.Repository + ":" + im.Tag
}

// ComposeService is one service of a compose project.
type ComposeService struct {
	Name       string   `json:"name"`
	State      string   `json:"state"`
	Containers []string `json:"containers"`
	Images     []string `json:"images"`
}

// ComposeProject is a compose project found through the labels that
// Compose v2, docker-compose v1 and podman-compose put on containers.
type ComposeProject struct {
	Engine      Engine           `json:"engine"`
	Name        string           `json:"name"`
	WorkingDir  string           `json:"working_dir,omitempty"`
	ConfigFiles []string         `json:"config_files"`
	Services    []ComposeService `json:"services"`
	State       string           `json:"state"` // running, partial, stopped
	Update      string           `json:"update"`
}

// EngineInfo is what one engine on a server reports.
type EngineInfo struct {
	Engine  Engine `json:"engine"`
	Version string `json:"version,omitempty"`
	// ComposeTools are the compose front ends found for this engine, best
	// first: "docker compose", "docker-compose", "podman compose",
	// "podman-compose".
	ComposeTools []string `json:"compose_tools"`
	Networks     int      `json:"networks"`
	Volumes      int      `json:"volumes"`
	// Errors are the listings that failed (the rest is still shown).
	Errors []string `json:"errors,omitempty"`
}

// Inventory is a server's containers, images and compose projects across
// its engines.
type Inventory struct {
	Engines    []EngineInfo     `json:"engines"`
	Containers []Container      `json:"containers"`
	Images     []Image          `json:"images"`
	Compose    []ComposeProject `json:"compose"`
	// CVEPackages are the packages of the CVE-relevant containers, read by
	// a container refresh (kept across refreshes while the container runs
	// the same image).
	CVEPackages []ImagePackages `json:"cve_packages,omitempty"`
}

// ImageRef is an image in use for the newer-image check.
type ImageRef struct {
	Engine Engine `json:"engine"`
	// Image is repository:tag as the container names it.
	Image string `json:"image"`
	// Digest is the local repo digest (sha256:…), empty if unknown.
	Digest string `json:"digest"`
	// Digests are all manifest digests the local image is known by
	// (Digest among them): the registry's current digest being one of
	// them means up to date.
	Digests []string `json:"digests,omitempty"`
}

// ImageUpdate is the checker's answer for one ImageRef.
type ImageUpdate struct {
	Image           string    `json:"image"`
	LocalDigest     string    `json:"local_digest"`
	RemoteDigest    string    `json:"remote_digest,omitempty"`
	UpdateAvailable bool      `json:"update_available"`
	Error           string    `json:"error,omitempty"`
	CheckedAt       time.Time `json:"checked_at"`
}

// UpdateChecker compares local digests with the registries' current
// digests (internal/registry implements it). A nil checker means "not
// checked" everywhere.
type UpdateChecker interface {
	Check(ctx context.Context, images []ImageRef) ([]ImageUpdate, error)
}

// InUseRefs lists the distinct images the containers use, with the local
// digest, for an UpdateChecker.
func (inv *Inventory) InUseRefs() []ImageRef {
	seen := map[string]bool{}
	var out []ImageRef
	for _, c := range inv.Containers {
		ref := NormalizeRef(c.Image)
		k := string(c.Engine) + " " + ref
		if ref == "" || seen[k] {
			continue
		}
		seen[k] = true
		r := ImageRef{Engine: c.Engine, Image: ref, Digest: c.ImageDigest}
		if c.ImageDigest != "" {
			r.Digests = append(r.Digests, c.ImageDigest)
		}
		repo := splitRef(ref)[0]
		for _, im := range inv.Images {
			if im.Engine != c.Engine || im.ID != c.ImageID || (im.Repository != repo && !im.Dangling && im.Repository != "<none>") {
				continue
			}
			for _, d := range append([]string{im.Digest}, im.Digests...) {
				if d != "" && !contains(r.Digests, d) {
					r.Digests = append(r.Digests, d)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// ApplyUpdates sets the update state of images, containers and compose
// projects from a checker's answers; images without an answer are
// not_checked.
func (inv *Inventory) ApplyUpdates(ups []ImageUpdate) {
	by := map[string]ImageUpdate{}
	for _, u := range ups {
		by[u.Image] = u
	}
	state := func(ref string) string {
		u, ok := by[ref]
		switch {
		case !ok:
			return UpdateNotChecked
		case u.Error != "":
			return UpdateCheckError
		case u.UpdateAvailable:
			return UpdateAvailable
		}
		return UpdateUpToDate
	}
	for i := range inv.Images {
		inv.Images[i].Update = state(inv.Images[i].Ref())
	}
	for i := range inv.Containers {
		inv.Containers[i].Update = state(NormalizeRef(inv.Containers[i].Image))
	}
	for i := range inv.Compose {
		inv.Compose[i].Update = projectUpdate(inv.Compose[i], inv.Containers)
	}
}

// projectUpdate: update_available if any container of the project has one;
// up_to_date only if every container was checked and is; else the worst
// of not_checked / check_failed.
func projectUpdate(p ComposeProject, cs []Container) string {
	out, n := UpdateUpToDate, 0
	for _, c := range cs {
		if c.Engine != p.Engine || c.ComposeProject != p.Name {
			continue
		}
		n++
		switch c.Update {
		case UpdateAvailable:
			return UpdateAvailable
		case UpdateCheckError:
			out = UpdateCheckError
		case UpdateNotChecked, "":
			if out != UpdateCheckError {
				out = UpdateNotChecked
			}
		}
	}
	if n == 0 {
		return UpdateNotChecked
	}
	return out
}

// Collected is one server's inventory as a job read it: what the regular
// refresh job hands the containers service to store (the container jobs
// store theirs through their own finish hook).
type Collected struct {
	ServerID  string
	JobID     string
	At        time.Time
	Inventory Inventory
}

// Package is one package installed in a container's filesystem.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch,omitempty"`
	Source  string `json:"source,omitempty"`
}

// ImagePackages are the packages read from a CVE-relevant container (its
// image and what the container changed): they feed the vulnerability
// scan. Images with dpkg (Debian, Ubuntu) or apk (Alpine) are read; Error
// says why a container could not be.
type ImagePackages struct {
	Engine    Engine `json:"engine"`
	Container string `json:"container"`
	Image     string `json:"image"`
	ImageID   string `json:"image_id"`
	OSID      string `json:"os_id,omitempty"`
	OSVersion string `json:"os_version,omitempty"`
	// Manager is the database the packages were read from: "dpkg" or
	// "apk" ("" in inventories stored before apk was read: dpkg).
	Manager  string    `json:"manager,omitempty"`
	Packages []Package `json:"packages"`
	Error    string    `json:"error,omitempty"`
	ReadAt   time.Time `json:"read_at"`
}
