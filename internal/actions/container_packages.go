package actions

import (
	"fmt"
	"io"
	"time"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/remote"
)

// copyOutTimeout bounds copying a package database out of a container (a
// few MB at most; a minute means the engine hangs).
const copyOutTimeout = time.Minute

// readPackages reads the installed packages of the images of the
// CVE-relevant containers found in inv: dpkg's status (else apk's
// installed database, Alpine) and the os-release, copied out of a container created (never started) from the image for
// the purpose (`create`, `cp NAME:PATH -`, `rm`). Copying from the
// marked container itself would join a running container's mount
// namespace (podman), where a host path can show through; a created
// container is read from the engine's storage, and cp resolves links
// inside the image. Only engine commands run, so restricted sudo mode
// allows it. A container that is gone is skipped; one whose image cannot
// be read (neither dpkg nor apk, e.g. RPM-based) is listed with its Error.
func (c *containerRun) readPackages(inv containers.Inventory) []containers.ImagePackages {
	out := []containers.ImagePackages{}
	for _, r := range c.p.CVE {
		ct, ok := findContainer(inv, r.Engine, r.Container)
		if !ok {
			continue
		}
		ip := containers.ImagePackages{Engine: ct.Engine, Container: ct.Name, Image: ct.Image, ImageID: ct.ImageID, Packages: []containers.Package{}, ReadAt: time.Now().UTC()}
		if err := c.readContainerPackages(&ip); err != nil {
			ip.Error = err.Error()
			fmt.Fprintf(c.env.Out, "lcm: %s: packages not read: %v\n", ct.Name, err)
		} else {
			fmt.Fprintf(c.env.Out, "lcm: %s: %d packages (%s %s)\n", ct.Name, len(ip.Packages), orDash(ip.OSID), orDash(ip.OSVersion))
		}
		out = append(out, ip)
	}
	return out
}

func (c *containerRun) readContainerPackages(ip *containers.ImagePackages) error {
	if ip.ImageID == "" {
		return fmt.Errorf("the container's image id is unknown")
	}
	tmp := "lcm-pkgs-" + short(ip.ImageID)
	e := string(ip.Engine)
	_, _, _ = capture(c.ctx, c.env.Exec, io.Discard, remote.Command{Cmd: containers.Sudo + e + " rm -f " + shQuote(tmp), Timeout: containerOpTimeout})
	_, code, err := capture(c.ctx, c.env.Exec, io.Discard, remote.Command{Cmd: containers.Sudo + e + " create --network none --name " + shQuote(tmp) + " " + shQuote(ip.ImageID) + " /lcm-never-started", Timeout: containerOpTimeout})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s create from image %s exited with code %d", e, short(ip.ImageID), code)
	}
	defer func() {
		_, _, _ = capture(c.ctx, c.env.Exec, io.Discard, remote.Command{Cmd: containers.Sudo + e + " rm -f " + shQuote(tmp), Timeout: containerOpTimeout})
	}()
	manager, parse := "dpkg", containers.ParseDpkgStatus
	db, err := c.copyOut(ip.Engine, tmp, containers.DpkgStatusPath)
	if err != nil {
		var apkErr error
		if db, apkErr = c.copyOut(ip.Engine, tmp, containers.ApkInstalledPath); apkErr != nil {
			return fmt.Errorf("no package database: dpkg (%s): %v; apk (%s): %w", containers.DpkgStatusPath, err, containers.ApkInstalledPath, apkErr)
		}
		manager, parse = "apk", containers.ParseApkInstalled
	}
	for _, p := range containers.OSReleasePaths {
		if rel, err := c.copyOut(ip.Engine, tmp, p); err == nil {
			ip.OSID, ip.OSVersion = containers.ParseOSRelease(rel)
			break
		}
	}
	if ip.OSID == "" {
		return fmt.Errorf("no os-release: the distribution of the packages is unknown")
	}
	ip.Manager, ip.Packages = manager, parse(db)
	return nil
}

func (c *containerRun) copyOut(e containers.Engine, container, path string) ([]byte, error) {
	raw, code, err := capture(c.ctx, c.env.Exec, io.Discard, remote.Command{Cmd: containers.CopyOutCommand(e, container, path), Timeout: copyOutTimeout})
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("%s cp exited with code %d", e, code)
	}
	return containers.FileFromTar([]byte(raw))
}
