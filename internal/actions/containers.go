package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/remote"
)

// Container ops (ContainerParams.Op).
const (
	ContainerRefresh       = "refresh"
	ContainerStart         = "start"
	ContainerStop          = "stop"
	ContainerRestart       = "restart"
	ContainerPull          = "pull"
	ContainerPullAll       = "pull-all"
	ContainerComposeUpdate = "compose-update"
	ContainerRemoveImage   = "remove-image"
	ContainerPrune         = "prune"
)

// Container command deadlines.
const (
	// containerOpTimeout bounds start/stop/restart: stop waits up to the
	// engine's 10 s grace period; 5 min means the engine hangs.
	containerOpTimeout = 5 * time.Minute
	// pullTimeout bounds a pull or a compose update: large images on a slow
	// link take many minutes.
	pullTimeout = time.Hour
	// pullIdle: pulls print progress; 10 min of silence is a hang.
	pullIdle = 10 * time.Minute
	// collectTimeout bounds the inventory listing (ps, inspect, images of
	// hundreds of containers take seconds).
	collectTimeout = 5 * time.Minute
)

// ContainerParams are a container job's parameters.
type ContainerParams struct {
	Op        string            `json:"op"`
	Engine    containers.Engine `json:"engine,omitempty"`
	Container string            `json:"container,omitempty"`
	Image     string            `json:"image,omitempty"`
	// Compose update: the project as the inventory found it, and the tool
	// (empty: the first one the engine has).
	Project     string     `json:"project,omitempty"`
	WorkingDir  string     `json:"working_dir,omitempty"`
	ConfigFiles []string   `json:"config_files,omitempty"`
	Tool        string     `json:"tool,omitempty"`
	Prune       *PruneSpec `json:"prune,omitempty"`
	// CVE (refresh): the containers marked CVE-relevant, whose packages
	// the refresh reads for the vulnerability scan (the service fills it
	// from the marks).
	CVE []CVERef `json:"cve,omitempty"`
}

// CVERef names a CVE-relevant container.
type CVERef struct {
	Engine    containers.Engine `json:"engine"`
	Container string            `json:"container"`
}

// PruneSpec says what a prune removes.
type PruneSpec struct {
	Containers bool `json:"containers"`
	Images     bool `json:"images"`
	// AllImages prunes every unused image, not only dangling ones.
	AllImages  bool `json:"all_images"`
	BuildCache bool `json:"build_cache"`
	DryRun     bool `json:"dry_run"`
}

// PruneReport is what a prune would free (before) and freed (after).
type PruneReport struct {
	Containers      []string `json:"containers"`
	Images          []string `json:"images"`
	ImageBytes      int64    `json:"image_bytes"`
	BuildCacheBytes int64    `json:"build_cache_bytes"`
}

// ContainerOutcome is the read-back proof of a container action.
type ContainerOutcome struct {
	Op      string `json:"op"`
	Target  string `json:"target,omitempty"`
	OK      bool   `json:"ok"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	// Digests: image reference → digest before and after (pull, compose).
	Before map[string]string `json:"before,omitempty"`
	After  map[string]string `json:"after,omitempty"`
	// WillFree / Freed: a prune's dry listing and its result.
	WillFree *PruneReport `json:"will_free,omitempty"`
	Freed    *PruneReport `json:"freed,omitempty"`
	At       time.Time    `json:"at"`
}

// ContainerData is a container job's payload: the inventory read after
// the action (nil if it could not be read) and the outcome.
type ContainerData struct {
	Inventory *containers.Inventory `json:"inventory,omitempty"`
	Outcome   ContainerOutcome      `json:"outcome"`
}

// Validate checks the params before a job is submitted and again on the
// worker (the shell sees only quoted, validated words).
func (p ContainerParams) Validate() error {
	bad := func(f string, a ...any) error { return failf("bad parameters: "+f, a...) }
	if p.Engine != "" && !p.Engine.Valid() {
		return bad("unknown engine %q", p.Engine)
	}
	for _, r := range p.CVE {
		if !r.Engine.Valid() || !containers.ValidName(r.Container) {
			return bad("CVE-relevant container %q is not a container name", truncateStr(r.Container, 80))
		}
	}
	switch p.Op {
	case ContainerRefresh, ContainerPullAll:
	case ContainerStart, ContainerStop, ContainerRestart:
		if !containers.ValidName(p.Container) {
			return bad("container name %q is not a container name", truncateStr(p.Container, 80))
		}
	case ContainerPull, ContainerRemoveImage:
		if !containers.ValidImageRef(p.Image) {
			return bad("image %q is not an image reference", truncateStr(p.Image, 80))
		}
	case ContainerComposeUpdate:
		if !containers.ValidName(p.Project) {
			return bad("project %q is not a compose project name", truncateStr(p.Project, 80))
		}
		if p.WorkingDir != "" && !containers.ValidPath(p.WorkingDir) {
			return bad("working directory %q is not an absolute path", truncateStr(p.WorkingDir, 80))
		}
		for _, f := range p.ConfigFiles {
			if !containers.ValidPath(f) && !containers.ValidPath(p.WorkingDir+"/"+f) {
				return bad("config file %q is not a path", truncateStr(f, 80))
			}
		}
		if p.Tool != "" && !containers.ValidComposeTool(p.Tool) {
			return bad("unknown compose tool %q", truncateStr(p.Tool, 40))
		}
	case ContainerPrune:
		if p.Prune == nil || !(p.Prune.Containers || p.Prune.Images || p.Prune.BuildCache) {
			return bad("prune needs at least one of containers, images, build_cache")
		}
	default:
		return bad("unknown op %q", truncateStr(p.Op, 40))
	}
	return nil
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// collect runs the collector (one command) and parses its output.
func collect(ctx context.Context, ex remote.Executor) (containers.Inventory, error) {
	raw, code, err := capture(ctx, ex, io.Discard, remote.Command{Cmd: containers.Script(), Timeout: collectTimeout})
	if err != nil {
		return containers.Inventory{}, err
	}
	if code != 0 {
		return containers.Inventory{}, failf("the container listing exited with code %d", code)
	}
	inv, err := containers.ParseCollect([]byte(raw))
	if err != nil {
		return inv, failf("the container listing could not be parsed: %v", err)
	}
	return inv, nil
}

// CollectContainers runs the collector and parses its output.
func CollectContainers(ctx context.Context, ex remote.Executor, out io.Writer) (containers.Inventory, error) {
	inv, err := collect(ctx, ex)
	if err != nil {
		return inv, err
	}
	for _, e := range inv.Engines {
		fmt.Fprintf(out, "lcm: %s %s: %d networks, %d volumes, compose: %s\n", e.Engine, orDash(e.Version), e.Networks, e.Volumes, orDash(strings.Join(e.ComposeTools, ", ")))
		for _, m := range e.Errors {
			fmt.Fprintf(out, "lcm: %s: %s\n", e.Engine, m)
		}
	}
	if len(inv.Engines) == 0 {
		fmt.Fprintln(out, "lcm: no container engine (docker, podman) on this server")
	}
	fmt.Fprintf(out, "lcm: %d containers, %d images, %d compose projects\n", len(inv.Containers), len(inv.Images), len(inv.Compose))
	return inv, nil
}

// ContainerJob is the container-action job.
type ContainerJob struct{}

// Run implements Action (the payload is dropped; runners use RunData).
func (j ContainerJob) Run(ctx context.Context, env *Env) (Result, error) {
	r, _, err := j.RunData(ctx, env)
	return r, err
}

// RunData implements DataAction: it runs the op, reads the effect back and
// returns ContainerData as JSON. A refused or failed op still carries the
// inventory read afterwards (when it could be read), so the server page
// shows the truth.
func (ContainerJob) RunData(ctx context.Context, env *Env) (Result, []byte, error) {
	var p ContainerParams
	if err := json.Unmarshal(env.Params, &p); err != nil {
		return Result{}, nil, failf("bad parameters: %v", err)
	}
	if err := p.Validate(); err != nil {
		return Result{}, nil, err
	}
	c := &containerRun{ctx: ctx, env: env, p: p}
	o, opErr := c.do()
	o.Op, o.At = p.Op, time.Now().UTC()
	if opErr != nil {
		o.OK = false
		if o.Message == "" {
			o.Message = opErr.Error()
		}
	}
	data := ContainerData{Outcome: o}
	if c.after != nil {
		data.Inventory = c.after
	} else if ctx.Err() == nil {
		if inv, err := CollectContainers(ctx, env.Exec, env.Out); err == nil {
			data.Inventory = &inv
		} else if opErr == nil {
			opErr = err
		}
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Result{}, nil, err
	}
	return Result{Message: o.Message}, b, opErr
}

type containerRun struct {
	ctx   context.Context
	env   *Env
	p     ContainerParams
	after *containers.Inventory
}

func (c *containerRun) collect() (containers.Inventory, error) {
	return CollectContainers(c.ctx, c.env.Exec, c.env.Out)
}

// readBack collects the inventory after the op; it is the job's payload.
func (c *containerRun) readBack() (containers.Inventory, error) {
	fmt.Fprintln(c.env.Out, "lcm: reading the effect back")
	inv, err := c.collect()
	if err == nil {
		c.after = &inv
	}
	return inv, err
}

func (c *containerRun) sh(cmd string, timeout time.Duration) (int, error) {
	fmt.Fprintf(c.env.Out, "$ %s\n", cmd)
	return run(c.ctx, c.env.Exec, c.env.Out, remote.Command{Cmd: cmd, Timeout: timeout, IdleTimeout: pullIdle})
}

// engineFor picks the engine: the named one, else the one that has the
// container/image, else the only one.
func (c *containerRun) engineFor(inv containers.Inventory, has func(containers.Engine) bool) (containers.Engine, error) {
	if c.p.Engine != "" {
		for _, e := range inv.Engines {
			if e.Engine == c.p.Engine {
				return e.Engine, nil
			}
		}
		return "", failf("engine %s is not installed on this server", c.p.Engine)
	}
	var found []containers.Engine
	for _, e := range inv.Engines {
		if has == nil || has(e.Engine) {
			found = append(found, e.Engine)
		}
	}
	switch len(found) {
	case 0:
		if len(inv.Engines) == 0 {
			return "", failf("no container engine (docker, podman) on this server")
		}
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", failf("both docker and podman have it; name the engine")
}

func (c *containerRun) do() (ContainerOutcome, error) {
	switch c.p.Op {
	case ContainerRefresh:
		inv, err := c.readBack()
		if err != nil {
			return ContainerOutcome{}, err
		}
		msg := fmt.Sprintf("%d containers, %d images, %d compose projects", len(inv.Containers), len(inv.Images), len(inv.Compose))
		if len(c.p.CVE) > 0 {
			c.after.CVEPackages = c.readPackages(inv)
			n := 0
			for _, ip := range c.after.CVEPackages {
				if ip.Error == "" {
					n++
				}
			}
			msg += fmt.Sprintf(", packages of %d of %d CVE-relevant containers read", n, len(c.after.CVEPackages))
		}
		return ContainerOutcome{OK: true, Message: msg}, nil
	case ContainerStart, ContainerStop, ContainerRestart:
		return c.lifecycle()
	case ContainerPull:
		return c.pull()
	case ContainerPullAll:
		return c.pullAll()
	case ContainerComposeUpdate:
		return c.composeUpdate()
	case ContainerRemoveImage:
		return c.removeImage()
	case ContainerPrune:
		return c.prune()
	}
	return ContainerOutcome{}, failf("unknown op %q", c.p.Op)
}

func (c *containerRun) lifecycle() (ContainerOutcome, error) {
	o := ContainerOutcome{Target: c.p.Container}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	e, err := c.engineFor(before, func(e containers.Engine) bool { return hasContainer(before, e, c.p.Container) })
	if err != nil {
		return o, err
	}
	if e == "" {
		o.Code = "container_not_found"
		return o, failf("container %s not found", c.p.Container)
	}
	prev, _ := findContainer(before, e, c.p.Container)
	code, err := c.sh(containers.Sudo+string(e)+" "+c.p.Op+" "+shQuote(c.p.Container), containerOpTimeout)
	if err != nil {
		return o, err
	}
	if code != 0 {
		return o, failf("%s %s exited with code %d", e, c.p.Op, code)
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	now, ok := findContainer(after, e, c.p.Container)
	if !ok {
		return o, failf("container %s is gone after %s", c.p.Container, c.p.Op)
	}
	wantRunning := c.p.Op != ContainerStop
	if (now.State == "running") != wantRunning {
		return o, failf("not proven: container %s is %s after %s", c.p.Container, now.State, c.p.Op)
	}
	if c.p.Op == ContainerRestart && prev.StartedAt != nil && now.StartedAt != nil && !now.StartedAt.After(*prev.StartedAt) {
		return o, failf("not proven: container %s was not restarted (start time unchanged)", c.p.Container)
	}
	o.OK = true
	o.Message = fmt.Sprintf("container %s is %s (proven by %s inspect)", c.p.Container, now.State, e)
	return o, nil
}

func hasContainer(inv containers.Inventory, e containers.Engine, name string) bool {
	_, ok := findContainer(inv, e, name)
	return ok
}

func findContainer(inv containers.Inventory, e containers.Engine, name string) (containers.Container, bool) {
	for _, c := range inv.Containers {
		if c.Engine == e && (c.Name == name || c.ID == name) {
			return c, true
		}
	}
	return containers.Container{}, false
}

func imagesOf(inv containers.Inventory, e containers.Engine, ref string) []containers.Image {
	var out []containers.Image
	for _, im := range inv.FindImage(containers.NormalizeRef(ref)) {
		if im.Engine == e {
			out = append(out, im)
		}
	}
	if len(out) == 0 {
		for _, im := range inv.FindImage(ref) {
			if im.Engine == e {
				out = append(out, im)
			}
		}
	}
	return out
}

func digestOf(inv containers.Inventory, e containers.Engine, ref string) string {
	for _, im := range imagesOf(inv, e, ref) {
		if im.Digest != "" {
			return im.Digest
		}
		return "id:" + im.ID
	}
	return ""
}

func (c *containerRun) pull() (ContainerOutcome, error) {
	o := ContainerOutcome{Target: c.p.Image, Before: map[string]string{}, After: map[string]string{}}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	e, err := c.engineFor(before, func(e containers.Engine) bool { return len(imagesOf(before, e, c.p.Image)) > 0 })
	if err != nil {
		return o, err
	}
	if e == "" {
		e = before.Engines[0].Engine
	}
	o.Before[c.p.Image] = digestOf(before, e, c.p.Image)
	code, err := c.sh(containers.Sudo+string(e)+" pull "+shQuote(c.p.Image), pullTimeout)
	if err != nil {
		return o, err
	}
	if code != 0 {
		return o, failf("%s pull %s exited with code %d", e, c.p.Image, code)
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	o.After[c.p.Image] = digestOf(after, e, c.p.Image)
	if o.After[c.p.Image] == "" {
		return o, failf("not proven: image %s is not listed after the pull", c.p.Image)
	}
	o.OK = true
	if o.After[c.p.Image] == o.Before[c.p.Image] {
		o.Message = fmt.Sprintf("image %s is current (digest %s unchanged)", c.p.Image, short(o.After[c.p.Image]))
	} else {
		o.Message = fmt.Sprintf("image %s pulled: new digest %s", c.p.Image, short(o.After[c.p.Image]))
	}
	return o, nil
}

func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func (c *containerRun) pullAll() (ContainerOutcome, error) {
	o := ContainerOutcome{Before: map[string]string{}, After: map[string]string{}}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	refs := before.InUseRefs()
	var failed []string
	for _, r := range refs {
		if c.p.Engine != "" && r.Engine != c.p.Engine {
			continue
		}
		key := string(r.Engine) + " " + r.Image
		o.Before[key] = digestOf(before, r.Engine, r.Image)
		code, err := c.sh(containers.Sudo+string(r.Engine)+" pull "+shQuote(r.Image), pullTimeout)
		if err != nil {
			return o, err
		}
		if code != 0 {
			failed = append(failed, r.Image)
		}
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	changed := 0
	for key := range o.Before {
		e, ref, _ := strings.Cut(key, " ")
		o.After[key] = digestOf(after, containers.Engine(e), ref)
		if o.After[key] != o.Before[key] {
			changed++
		}
	}
	o.Message = fmt.Sprintf("%d images in use pulled, %d with a new digest", len(o.Before)-len(failed), changed)
	if len(failed) > 0 {
		return o, failf("%s; pull failed for %s", o.Message, strings.Join(failed, ", "))
	}
	o.OK = true
	return o, nil
}

// composeCommand builds "pull" or "up -d" for tool. Compose v2 takes the
// project directory as a flag; the others run in it.
func composeCommand(tool string, p ContainerParams, verb string) string {
	files := ""
	for _, f := range p.ConfigFiles {
		files += " -f " + shQuote(f)
	}
	proj := " -p " + shQuote(p.Project)
	cd := ""
	if p.WorkingDir != "" {
		cd = "cd " + shQuote(p.WorkingDir) + " && "
	}
	switch tool {
	case "docker compose":
		dir := ""
		if p.WorkingDir != "" {
			dir = " --project-directory " + shQuote(p.WorkingDir)
		}
		return cd + containers.Sudo + "docker compose" + dir + proj + files + " " + verb
	default: // docker-compose, podman compose, podman-compose
		return cd + containers.Sudo + tool + proj + files + " " + verb
	}
}

func (c *containerRun) composeUpdate() (ContainerOutcome, error) {
	o := ContainerOutcome{Target: c.p.Project, Before: map[string]string{}, After: map[string]string{}}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	var proj *containers.ComposeProject
	for i := range before.Compose {
		if before.Compose[i].Name == c.p.Project && (c.p.Engine == "" || before.Compose[i].Engine == c.p.Engine) {
			proj = &before.Compose[i]
			break
		}
	}
	if proj == nil {
		o.Code = "project_not_found"
		return o, failf("compose project %s not found", c.p.Project)
	}
	p := c.p
	if p.WorkingDir == "" {
		p.WorkingDir = proj.WorkingDir
	}
	if len(p.ConfigFiles) == 0 {
		p.ConfigFiles = proj.ConfigFiles
	}
	tool := p.Tool
	if tool == "" {
		for _, e := range before.Engines {
			if e.Engine == proj.Engine && len(e.ComposeTools) > 0 {
				tool = e.ComposeTools[0]
			}
		}
	}
	if tool == "" {
		o.Code = "no_compose_tool"
		return o, failf("no compose tool for %s on this server (docker compose, docker-compose, podman compose or podman-compose)", proj.Engine)
	}
	for _, ct := range before.Containers {
		if ct.Engine == proj.Engine && ct.ComposeProject == proj.Name {
			o.Before[ct.Name] = ct.ImageDigest
		}
	}
	code, err := c.sh(composeCommand(tool, p, "pull"), pullTimeout)
	if err != nil {
		return o, err
	}
	if code != 0 {
		return o, failf("%s pull exited with code %d", tool, code)
	}
	up := "up -d"
	if !recreatesChanged(tool) {
		// podman-compose's up starts the existing containers as they are,
		// on the old image: when the pull brought a new image for one of
		// them, the project is recreated.
		pulled, err := c.collect()
		if err != nil {
			return o, err
		}
		if stale := staleContainers(pulled, proj); len(stale) > 0 {
			fmt.Fprintf(c.env.Out, "lcm: new image for %s; %s recreates the project's containers\n", strings.Join(stale, ", "), tool)
			up += " --force-recreate"
		}
	}
	code, err = c.sh(composeCommand(tool, p, up), pullTimeout)
	if err != nil {
		return o, err
	}
	if code != 0 {
		return o, failf("%s %s exited with code %d", tool, up, code)
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	running, total, changed := 0, 0, 0
	for _, ct := range after.Containers {
		if ct.Engine != proj.Engine || ct.ComposeProject != proj.Name {
			continue
		}
		total++
		o.After[ct.Name] = ct.ImageDigest
		if ct.State == "running" {
			running++
		}
		if b, ok := o.Before[ct.Name]; !ok || b != ct.ImageDigest {
			changed++
		}
	}
	if total == 0 || running != total {
		return o, failf("not proven: %d of %d containers of %s run after up -d", running, total, proj.Name)
	}
	o.OK = true
	o.Message = fmt.Sprintf("compose project %s: %d containers running, %d on a new image digest", proj.Name, running, changed)
	return o, nil
}

// recreatesChanged reports whether tool's `up -d` recreates the containers
// whose image changed: Compose v2 and docker-compose v1 compare the
// image; podman-compose (1.0, Debian 12) starts the existing containers
// as they are, and `podman compose` may be podman-compose underneath.
func recreatesChanged(tool string) bool {
	return tool == "docker compose" || tool == "docker-compose"
}

// staleContainers names the project's containers whose image reference now
// names another image than the one they run.
func staleContainers(inv containers.Inventory, proj *containers.ComposeProject) []string {
	var out []string
	for _, ct := range inv.Containers {
		if ct.Engine != proj.Engine || ct.ComposeProject != proj.Name {
			continue
		}
		if ims := imagesOf(inv, ct.Engine, ct.Image); len(ims) > 0 && ims[0].ID != ct.ImageID {
			out = append(out, ct.Name)
		}
	}
	return out
}

func (c *containerRun) removeImage() (ContainerOutcome, error) {
	o := ContainerOutcome{Target: c.p.Image}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	e, err := c.engineFor(before, func(e containers.Engine) bool { return len(imagesOf(before, e, c.p.Image)) > 0 })
	if err != nil {
		return o, err
	}
	if e == "" {
		o.Code = "image_not_found"
		return o, failf("image %s not found", c.p.Image)
	}
	for _, im := range imagesOf(before, e, c.p.Image) {
		if im.InUse {
			o.Code = "image_in_use"
			var users []string
			for _, ct := range before.Containers {
				if ct.Engine == e && ct.ImageID == im.ID {
					users = append(users, ct.Name)
				}
			}
			return o, failf("image_in_use: image %s is used by %s; remove or update those containers first", c.p.Image, strings.Join(users, ", "))
		}
	}
	code, err := c.sh(containers.Sudo+string(e)+" rmi "+shQuote(c.p.Image), containerOpTimeout)
	if err != nil {
		return o, err
	}
	if code != 0 {
		return o, failf("%s rmi %s exited with code %d", e, c.p.Image, code)
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	if len(imagesOf(after, e, c.p.Image)) > 0 {
		return o, failf("not proven: image %s is still listed", c.p.Image)
	}
	o.OK = true
	o.Message = fmt.Sprintf("image %s removed (no longer listed by %s)", c.p.Image, e)
	return o, nil
}

// pruneCandidates is what a prune of spec would remove from inv.
func pruneCandidates(inv containers.Inventory, spec PruneSpec, e containers.Engine) PruneReport {
	r := PruneReport{Containers: []string{}, Images: []string{}}
	if spec.Containers {
		for _, c := range inv.Containers {
			if c.Engine == e && c.State != "running" && c.State != "paused" && c.State != "restarting" {
				r.Containers = append(r.Containers, c.Name)
			}
		}
	}
	if spec.Images {
		// Containers pruned first free their images too.
		gone := map[string]bool{}
		for _, n := range r.Containers {
			gone[n] = true
		}
		used := map[string]bool{}
		for _, c := range inv.Containers {
			if c.Engine == e && !gone[c.Name] {
				used[c.ImageID] = true
			}
		}
		seen := map[string]bool{}
		for _, im := range inv.Images {
			if im.Engine != e || used[im.ID] || seen[im.ID] {
				continue
			}
			if im.Dangling || spec.AllImages {
				seen[im.ID] = true
				r.Images = append(r.Images, im.Ref())
				r.ImageBytes += im.Size
			}
		}
	}
	return r
}

func (c *containerRun) prune() (ContainerOutcome, error) {
	spec := *c.p.Prune
	o := ContainerOutcome{WillFree: &PruneReport{Containers: []string{}, Images: []string{}}}
	before, err := c.collect()
	if err != nil {
		return o, err
	}
	if len(before.Engines) == 0 {
		return o, failf("no container engine (docker, podman) on this server")
	}
	var engines []containers.Engine
	for _, e := range before.Engines {
		if c.p.Engine == "" || c.p.Engine == e.Engine {
			engines = append(engines, e.Engine)
		}
	}
	per := map[containers.Engine]PruneReport{}
	for _, e := range engines {
		r := pruneCandidates(before, spec, e)
		per[e] = r
		o.WillFree.Containers = append(o.WillFree.Containers, r.Containers...)
		o.WillFree.Images = append(o.WillFree.Images, r.Images...)
		o.WillFree.ImageBytes += r.ImageBytes
	}
	if spec.BuildCache {
		for _, e := range engines {
			if e == containers.Docker {
				o.WillFree.BuildCacheBytes += c.dockerBuildCache()
			}
		}
	}
	fmt.Fprintf(c.env.Out, "lcm: a prune frees %d containers, %d images (%d bytes), build cache %d bytes\n",
		len(o.WillFree.Containers), len(o.WillFree.Images), o.WillFree.ImageBytes, o.WillFree.BuildCacheBytes)
	if spec.DryRun {
		c.after = &before
		o.OK = true
		o.Message = fmt.Sprintf("would free %d containers, %d images (%s), build cache %s", len(o.WillFree.Containers), len(o.WillFree.Images), humanBytes(o.WillFree.ImageBytes), humanBytes(o.WillFree.BuildCacheBytes))
		return o, nil
	}
	for _, e := range engines {
		var cmds []string
		if spec.Containers {
			cmds = append(cmds, containers.Sudo+string(e)+" container prune -f")
		}
		if spec.Images {
			all := ""
			if spec.AllImages {
				all = " -a"
			}
			cmds = append(cmds, containers.Sudo+string(e)+" image prune -f"+all)
		}
		if spec.BuildCache && e == containers.Docker {
			cmds = append(cmds, containers.Sudo+"docker builder prune -f")
		}
		for _, cmd := range cmds {
			code, err := c.sh(cmd, containerOpTimeout)
			if err != nil {
				return o, err
			}
			if code != 0 {
				return o, failf("%s exited with code %d", cmd, code)
			}
		}
	}
	after, err := c.readBack()
	if err != nil {
		return o, err
	}
	o.Freed = &PruneReport{Containers: []string{}, Images: []string{}}
	for _, e := range engines {
		for _, n := range per[e].Containers {
			if !hasContainer(after, e, n) {
				o.Freed.Containers = append(o.Freed.Containers, n)
			}
		}
		for _, im := range before.Images {
			if im.Engine == e && len(after.FindImage(im.ID)) == 0 && !containsStr(o.Freed.Images, im.Ref()) {
				o.Freed.Images = append(o.Freed.Images, im.Ref())
				o.Freed.ImageBytes += im.Size
			}
		}
	}
	if spec.BuildCache {
		for _, e := range engines {
			if e == containers.Docker {
				o.Freed.BuildCacheBytes = max(o.WillFree.BuildCacheBytes-c.dockerBuildCache(), 0)
			}
		}
	}
	o.OK = true
	o.Message = fmt.Sprintf("freed %d containers, %d images (%s), build cache %s", len(o.Freed.Containers), len(o.Freed.Images), humanBytes(o.Freed.ImageBytes), humanBytes(o.Freed.BuildCacheBytes))
	return o, nil
}

// dockerBuildCache reads the build cache size from `docker system df`.
func (c *containerRun) dockerBuildCache() int64 {
	raw, code, err := capture(c.ctx, c.env.Exec, io.Discard, remote.Command{Cmd: containers.Sudo + "docker system df --format json", Timeout: shortTimeout})
	if err != nil || code != 0 {
		return 0
	}
	n, _ := containers.ParseBuildCache([]byte(raw))
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
