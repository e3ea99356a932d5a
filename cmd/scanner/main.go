// Command lcm-scanner matches a CycloneDX SBOM against vulnerability
// advisories in OSV format, offline. It never contacts managed servers: the
// SBOM is built from the package records LCM keeps, and the advisories come
// from a local directory (an OSV export or the fixtures the tests ship).
//
// Usage:
//
//	lcm-scanner scan -sbom sbom.json -advisories dir [-min-severity high]
//	lcm-scanner -version
//
// The output is a JSON array of findings on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lcmproject/lcm/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcm-scanner:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintln(stdout, version.Get().String("lcm-scanner"))
		return nil
	}
	if len(args) == 0 || args[0] != "scan" {
		return errors.New("usage: lcm-scanner scan -sbom FILE -advisories DIR [-min-severity low|medium|high|critical] | -version")
	}
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sbomPath := fs.String("sbom", "", "CycloneDX JSON SBOM of one server")
	advDir := fs.String("advisories", "", "directory of OSV advisory JSON files")
	minSev := fs.String("min-severity", "low", "report findings from this severity on")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *sbomPath == "" || *advDir == "" {
		return errors.New("scan needs -sbom and -advisories")
	}
	min, ok := severityRank[*minSev]
	if !ok {
		return fmt.Errorf("-min-severity %q: want low, medium, high or critical", *minSev)
	}
	comps, err := readSBOM(*sbomPath)
	if err != nil {
		return err
	}
	advs, err := readAdvisories(*advDir)
	if err != nil {
		return err
	}
	findings := match(comps, advs, min)
	return writeJSON(stdout, findings)
}
