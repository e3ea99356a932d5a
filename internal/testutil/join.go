package testutil

import (
	"sync"
	"testing"
)

// JoinAll onboards n hosts: it runs join for each host index, at most
// limit at once, and fails the test with the first error a join returned.
// It returns the server ids and the join job ids in host order; the caller
// waits for the jobs (through the API or the database).
func JoinAll(t testing.TB, n, limit int, join func(i int) (serverID, jobID string, err error)) (serverIDs, jobIDs []string) {
	t.Helper()
	ids := make([]string, n)
	jobs := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, limit)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			id, job, err := join(i)
			if err != nil {
				errs <- err
				return
			}
			ids[i], jobs[i] = id, job
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids, jobs
}
