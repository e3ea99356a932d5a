// Command lcm-probe is the health check of LCM's container images: it
// fetches one URL and exits 0 when the answer is 2xx, 1 otherwise (the
// status and the first line of the body on stderr). The images carry no
// curl or wget; a compose file or an orchestrator runs
//
//	lcm-probe http://127.0.0.1:9340/healthz
//	lcm-probe -insecure https://127.0.0.1:9310/health
//
// -insecure skips certificate verification (a loopback check of a
// self-signed listener); -ca trusts a CA file instead.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lcm-probe:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("lcm-probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	insecure := fs.Bool("insecure", false, "do not verify the server's certificate")
	caFile := fs.String("ca", "", "PEM file of the CA to verify the server's certificate with")
	serverName := fs.String("servername", "", "name to verify the certificate for (default: the URL's host)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: lcm-probe [-insecure | -ca FILE] [-servername NAME] [-timeout 5s] URL")
	}
	url := fs.Arg(0)
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: *insecure, ServerName: *serverName} //nolint:gosec // -insecure is the operator's explicit choice for loopback checks
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return err
		}
		tlsCfg.RootCAs = x509.NewCertPool()
		if !tlsCfg.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no PEM certificate", *caFile)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	line, _ := bufio.NewReader(io.LimitReader(resp.Body, 512)).ReadString('\n')
	return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(line))
}
