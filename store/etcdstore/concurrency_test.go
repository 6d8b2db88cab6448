package etcdstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
	etcdtest "github.com/wisent/stado/tests/etcd"
)

// TestMain also serves as two helpers when their environment is set: the
// updater child below and the seeding child of bench_test.go.
//
// Environment of the updater child: the test binary re-executed with these
// set runs childUpdates registry.Update increments against the store URL
// and exits.
const (
	childURLEnv     = "STADO_ETCDSTORE_CHILD_URL"
	childUpdatesEnv = "STADO_ETCDSTORE_CHILD_UPDATES"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(childURLEnv); url != "" {
		os.Exit(runUpdaterChild(url, os.Getenv(childUpdatesEnv)))
	}
	if url := os.Getenv(seedURLEnv); url != "" {
		os.Exit(runSeedChild(url, os.Getenv(seedHostsEnv)))
	}
	os.Exit(m.Run())
}

func runUpdaterChild(url, count string) int {
	n, err := strconv.Atoi(count)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %s=%q: %v\n", childUpdatesEnv, count, err)
		return 2
	}
	ctx := context.Background()
	st, err := store.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer st.Close()
	for i := 0; i < n; i++ {
		if _, _, err := registry.Update(ctx, st, "child increment", incrementCounter); err != nil {
			fmt.Fprintf(os.Stderr, "child: update %d: %v\n", i, err)
			return 1
		}
	}
	return 0
}

// TestUpdatesFromFourProcessesLoseNone: four processes (this test binary
// re-executed) each run 100 registry.Update increments of one counter on
// one etcd; the counter ends at exactly 400 and the history holds 400
// entries, one per revision written.
func TestUpdatesFromFourProcessesLoseNone(t *testing.T) {
	t.Setenv("STADO_HISTORY_KEEP", "1000") // every revision stays to be counted
	c := etcdtest.Start(t, 1)
	const procs, each = 4, 100
	url := fmt.Sprintf("etcd://%s/procs/%d", hostPorts(c), prefixes.Add(1))
	var wg sync.WaitGroup
	errs := make([]error, procs)
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childURLEnv+"="+url, childUpdatesEnv+"="+strconv.Itoa(each), "STADO_WRITER=child"+strconv.Itoa(p))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				errs[p] = fmt.Errorf("child %d (pid %d): %v: %s", p, cmd.Process.Pid, err, stderr.Bytes())
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, _, err := registry.Load(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ServiceResolver.RefreshSeconds; got != procs*each {
		t.Fatalf("counter = %d after %d×%d updates, want %d", got, procs, each, procs*each)
	}
	h, err := registry.History(context.Background(), st)
	if err != nil || len(h) != procs*each {
		t.Fatalf("history has %d entries (%v), want %d", len(h), err, procs*each)
	}
	writers := map[string]int{}
	for _, m := range h {
		writers[m.Writer]++
	}
	for p := 0; p < procs; p++ {
		if w := "child" + strconv.Itoa(p); writers[w] != each {
			t.Fatalf("history: %s wrote %d revisions, want %d (%v)", w, writers[w], each, writers)
		}
	}
}

// TestClusterKeepsUpdatesWhenTheLeaderDies: 200 registry updates through a
// store that knows all 3 members; after 60 of them the leader is killed
// with SIGKILL. The remaining updates go on (the other two elect a new
// leader, the client moves to them), the counter ends at exactly 200 and
// every revision has its history entry. The killed member, restarted,
// catches up: a serializable read from it alone returns the final registry
// at the final revision.
func TestClusterKeepsUpdatesWhenTheLeaderDies(t *testing.T) {
	t.Setenv("STADO_HISTORY_KEEP", "1000") // every revision stays to be counted
	c := etcdtest.Start(t, 3)
	st := openFresh(t, c)
	ctx := context.Background()
	const total, killAt = 200, 60
	killed := -1
	for i := 0; i < total; i++ {
		if i == killAt {
			killed = leader(t, st, c)
			t.Logf("killing leader m%d (pid %d) after %d updates", killed+1, c.Pid(killed), i)
			c.Kill(killed)
		}
		if _, _, err := registry.Update(ctx, st, "fault test", incrementCounter); err != nil {
			t.Fatalf("update %d (member m%d killed: %v): %v", i, killed+1, i >= killAt, err)
		}
	}
	final, err := st.Get(ctx, store.RegistryKey)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := registry.Load(ctx, st)
	if err != nil || d.ServiceResolver.RefreshSeconds != total {
		t.Fatalf("counter = %v (%v), want %d", d, err, total)
	}
	if h, err := registry.History(ctx, st); err != nil || len(h) != total {
		t.Fatalf("history has %d entries (%v), want %d", len(h), err, total)
	}

	c.Restart(killed)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var resp rangeResponse
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := post(rctx, c.ClientURL(killed), "/v3/kv/range", rangeRequest{Key: []byte(st.base + store.RegistryKey), Serializable: true}, &resp)
		cancel()
		if err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].ModRevision == final.Revision {
			v, derr := decodeValue(resp.Kvs[0].Value)
			if derr != nil || !bytes.Equal(v, final.Value) {
				t.Fatalf("restarted member holds revision %d with other bytes (%v)", final.Revision, derr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member m%d has not caught up to revision %d in 30s: %v %v", killed+1, final.Revision, resp, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leader returns the index of the member that leads the cluster.
func leader(t *testing.T, st *Store, c *etcdtest.Cluster) int {
	t.Helper()
	for i, ep := range c.Endpoints() {
		var resp memberStatus
		mustPost(t, ep, "/v3/maintenance/status", struct{}{}, &resp)
		if resp.Leader == resp.Header.MemberID {
			return i
		}
	}
	t.Fatal("no member says it leads")
	return -1
}
