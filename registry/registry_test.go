package registry_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

// TestMain doubles as the writer child of the kill test: with
// STADO_TEST_WRITER_STORE set, the test binary increments the registry
// counter in that store until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("STADO_TEST_WRITER_STORE"); dir != "" {
		os.Exit(runWriterChild(dir))
	}
	os.Exit(m.Run())
}

func runWriterChild(dir string) int {
	st, err := store.OpenFileStore(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	for {
		if _, _, err := registry.Update(context.Background(), st, "kill test", incrementCounter); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// openFileStore opens a file store in a directory of the test's own.
func openFileStore(t *testing.T) *store.FileStore {
	t.Helper()
	st, err := store.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// incrementCounter adds one to the counter the tests keep in
// service_resolver.refresh_seconds.
func incrementCounter(d *registry.Document) error {
	d.ServiceResolver.RefreshSeconds++
	return nil
}

// fleet generates a valid document of n targets with m services each,
// every service with its own directory entry.
func fleet(n, m int) *registry.Document {
	d := &registry.Document{Version: 1, ServiceResolver: registry.ServiceResolver{RefreshSeconds: 1}}
	for i := 0; i < n; i++ {
		t := registry.Target{
			Name: fmt.Sprintf("host%d", i+1),
			SSH:  registry.SSH{Address: fmt.Sprintf("127.0.%d.%d", 1+i/250, 1+i%250), Port: 22, User: "root"},
			OS:   registry.OSLinux,
		}
		for j := 0; j < m; j++ {
			name := fmt.Sprintf("svc%d-%d", i, j)
			t.Services = append(t.Services, registry.Service{
				Name:     name,
				Unit:     name + ".service",
				UnitPath: "/etc/systemd/system/" + name + ".service",
				Program:  "/usr/local/bin/svc",
				Args:     []string{"serve", "--listen", fmt.Sprintf("%s:%d", t.SSH.Address, 9000+j)},
				Env:      map[string]string{"SVC_INDEX": fmt.Sprint(j)},
			})
			d.Directory = append(d.Directory, registry.DirectoryEntry{Service: name, Host: t.Name, Port: 9000 + j})
		}
		d.Targets = append(d.Targets, t)
	}
	return d
}

func TestGeneratedFleetIsValid(t *testing.T) {
	if err := registry.Validate(fleet(10, 5)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadOfEmptyStoreIsNotFound(t *testing.T) {
	st := openFileStore(t)
	if _, _, err := registry.Load(context.Background(), st); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load = %v, want ErrNotFound", err)
	}
	h, err := registry.History(context.Background(), st)
	if err != nil || len(h) != 0 {
		t.Fatalf("History = %v, %v; want empty", h, err)
	}
}

func TestPushRecordsMetaAndHistory(t *testing.T) {
	t.Setenv("STADO_WRITER", "tester@ws")
	st := openFileStore(t)
	ctx := context.Background()
	d1 := fleet(2, 1)
	m1, err := registry.Push(ctx, st, d1, 0, "first")
	if err != nil {
		t.Fatal(err)
	}
	d2 := d1.Clone()
	d2.Targets = d2.Targets[:1]
	d2.Directory = d2.Directory[:1]
	m2, err := registry.Push(ctx, st, d2, m1.Revision, "second")
	if err != nil {
		t.Fatal(err)
	}
	got, meta, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Revision != m2.Revision || meta.Writer != "tester@ws" || meta.Reason != "second" || meta.Time.IsZero() {
		t.Fatalf("Load meta = %+v, want revision %d by tester@ws for second", meta, m2.Revision)
	}
	if !registry.Diff(d2, got).Empty() {
		t.Fatalf("loaded document differs: %+v", registry.Diff(d2, got))
	}
	old, oldMeta, err := registry.LoadRevision(ctx, st, m1.Revision)
	if err != nil || oldMeta.Reason != "first" || oldMeta.Revision != m1.Revision || !registry.Diff(d1, old).Empty() {
		t.Fatalf("LoadRevision(%d) = %+v, %v", m1.Revision, oldMeta, err)
	}
	if _, _, err := registry.LoadRevision(ctx, st, m2.Revision+100); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadRevision of unknown revision: %v, want ErrNotFound", err)
	}
	h, err := registry.History(ctx, st)
	if err != nil || len(h) != 2 || h[0].Revision != m1.Revision || h[1].Revision != m2.Revision || h[1].Reason != "second" {
		t.Fatalf("History = %+v, %v", h, err)
	}
}

func TestPushAgainstStaleRevisionConflicts(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	m, err := registry.Push(ctx, st, fleet(1, 1), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = registry.Push(ctx, st, fleet(2, 1), 0, "")
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Got != m.Revision {
		t.Fatalf("Push expecting 0 over revision %d: %v, want *ConflictError", m.Revision, err)
	}
}

func TestPushOfInvalidDocumentChangesNothing(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	m, err := registry.Push(ctx, st, fleet(1, 1), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	bad := fleet(1, 1)
	bad.Targets[0].OS = "plan9"
	bad.Version = 2
	_, err = registry.Push(ctx, st, bad, m.Revision, "")
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 2 {
		t.Fatalf("Push invalid = %v, want *ValidationError with 2 violations", err)
	}
	_, meta, err := registry.Load(ctx, st)
	if err != nil || meta.Revision != m.Revision {
		t.Fatalf("after refused push: revision %d, %v; want %d", meta.Revision, err, m.Revision)
	}
	if h, _ := registry.History(ctx, st); len(h) != 1 {
		t.Fatalf("history has %d entries after a refused push, want 1", len(h))
	}
}

func TestUpdateStartsFromEmptyDocument(t *testing.T) {
	st := openFileStore(t)
	d, m, err := registry.Update(context.Background(), st, "init", func(d *registry.Document) error {
		if d.Version != 1 || len(d.Targets) != 0 {
			return fmt.Errorf("fn saw %+v, want an empty version 1 document", d)
		}
		d.Targets = append(d.Targets, registry.Target{Name: "host1", OS: registry.OSLinux})
		return nil
	})
	if err != nil || m.Revision <= 0 || len(d.Targets) != 1 {
		t.Fatalf("Update = %+v, %+v, %v", d, m, err)
	}
}

func TestUpdateReturnsErrorOfFnAndWritesNothing(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	m, _ := registry.Push(ctx, st, fleet(1, 1), 0, "")
	boom := errors.New("boom")
	if _, _, err := registry.Update(ctx, st, "", func(d *registry.Document) error { return boom }); err != boom {
		t.Fatalf("Update = %v, want fn's error as it is", err)
	}
	if _, meta, _ := registry.Load(ctx, st); meta.Revision != m.Revision {
		t.Fatalf("revision %d after failed fn, want %d", meta.Revision, m.Revision)
	}
}

func TestUpdateToInvalidDocumentIsRefusedAndWritesNothing(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	m, _ := registry.Push(ctx, st, fleet(1, 1), 0, "")
	_, _, err := registry.Update(ctx, st, "", func(d *registry.Document) error {
		d.Targets[0].Services[0].Program = "relative/program"
		return nil
	})
	var ve *registry.ValidationError
	if !errors.As(err, &ve) || ve.Violations[0].Path != "targets[0].services[0].program" {
		t.Fatalf("Update = %v, want a violation at targets[0].services[0].program", err)
	}
	if _, meta, _ := registry.Load(ctx, st); meta.Revision != m.Revision {
		t.Fatalf("revision %d after refused update, want %d", meta.Revision, m.Revision)
	}
}

func TestUpdateGivesFnACopy(t *testing.T) {
	st := openFileStore(t)
	ctx := context.Background()
	orig := fleet(1, 1)
	if _, err := registry.Push(ctx, st, orig, 0, ""); err != nil {
		t.Fatal(err)
	}
	var seen *registry.Document
	_, _, _ = registry.Update(ctx, st, "", func(d *registry.Document) error {
		seen = d
		d.Targets[0].Services[0].Args[0] = "changed"
		d.Targets[0].Services[0].Env["X"] = "y"
		return errors.New("abandon")
	})
	cur, _, _ := registry.Load(ctx, st)
	if seen == nil || cur.Targets[0].Services[0].Args[0] != "serve" || cur.Targets[0].Services[0].Env["X"] != "" {
		t.Fatal("an abandoned update changed the stored document")
	}
	c := orig.Clone()
	c.Targets[0].Services[0].Env["SVC_INDEX"] = "changed"
	c.Targets[0].Services[0].Args[1] = "changed"
	if orig.Targets[0].Services[0].Env["SVC_INDEX"] == "changed" || orig.Targets[0].Services[0].Args[1] == "changed" {
		t.Fatal("Clone shares maps or slices with its source")
	}
}

// 32 writers each add 50 to one counter at once. Update retries conflicts
// with back-off until its context ends (here five minutes), never after a
// fixed number of attempts, so on a loaded machine every increment still
// lands, late rather than lost.
func TestConcurrentUpdatesFromManyGoroutinesLoseNoIncrement(t *testing.T) {
	st := openFileStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const workers, each = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, _, err := registry.Update(ctx, st, "increment", incrementCounter); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, _, err := registry.Load(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ServiceResolver.RefreshSeconds; got != workers*each {
		t.Fatalf("counter = %d, want %d", got, workers*each)
	}
}

// conflictingStore is a file store whose registry compare-and-swap always
// finds another writer's revision.
type conflictingStore struct {
	*store.FileStore
	attempts atomic.Int64
}

func (s *conflictingStore) CompareAndSwap(ctx context.Context, key string, value []byte, expect int64, opts store.PutOptions) (int64, error) {
	s.attempts.Add(1)
	return 0, &store.ConflictError{Key: key, Want: expect, Got: expect + 1}
}

// Under endless conflicts Update keeps trying until its context ends, and
// the error says both: the context's end and the last conflict.
func TestUpdateRetriesConflictsUntilItsContextEnds(t *testing.T) {
	st := &conflictingStore{FileStore: openFileStore(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := registry.Update(ctx, st, "", incrementCounter)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Update = %v, want an error matching both context.DeadlineExceeded and ErrConflict", err)
	}
	// It tried again (more than once) but backed off between attempts: a
	// loop without back-off makes thousands of attempts in 300ms, the
	// doubling waits about ten.
	if n := st.attempts.Load(); n < 2 || n > 100 {
		t.Fatalf("%d attempts in 300ms, want more than one and a back-off's worth at most", n)
	}
}

// slowAfterConflictStore conflicts once, then its next read lasts until
// the caller's context ends: the deadline falls inside a load.
type slowAfterConflictStore struct {
	conflictingStore
}

func (s *slowAfterConflictStore) Get(ctx context.Context, key string) (store.Object, error) {
	if s.attempts.Load() > 0 {
		<-ctx.Done()
		return store.Object{}, ctx.Err()
	}
	return s.FileStore.Get(ctx, key)
}

// When the context ends while a retry is loading, the error still says the
// earlier attempts met conflicts: the load is not what went wrong.
func TestUpdateWhoseContextEndsInARetrysLoadStillReportsTheConflict(t *testing.T) {
	st := &slowAfterConflictStore{conflictingStore{FileStore: openFileStore(t)}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := registry.Update(ctx, st, "", incrementCounter)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Update = %v, want an error matching both context.DeadlineExceeded and ErrConflict", err)
	}
}

// A writer killed with SIGKILL at random points leaves the registry
// readable at the revision it last completed (old or new), never partial,
// and the lock free for the next writer.
func TestWriterKilledMidWriteLeavesStoreConsistent(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A document large enough that a kill often lands inside a write.
	seed := fleet(40, 10)
	seed.ServiceResolver.RefreshSeconds = 1
	if _, err := registry.Push(ctx, st, seed, 0, "seed"); err != nil {
		t.Fatal(err)
	}
	var last int64 = 1
	for i := 0; i < 50; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STADO_TEST_WRITER_STORE="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("writer child: %q, %v", line, err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(40 * time.Millisecond))))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		d, meta, err := registry.Load(ctx, st)
		if err != nil {
			t.Fatalf("kill %d: registry unreadable: %v", i, err)
		}
		if err := registry.Validate(d); err != nil {
			t.Fatalf("kill %d: stored registry invalid: %v", i, err)
		}
		if meta.Revision < last {
			t.Fatalf("kill %d: revision went back from %d to %d", i, last, meta.Revision)
		}
		// Each write adds one to the counter and one to the file store's
		// per-key revision: a partial or mixed write breaks the equality.
		if int64(d.ServiceResolver.RefreshSeconds) != meta.Revision {
			t.Fatalf("kill %d: counter %d at revision %d", i, d.ServiceResolver.RefreshSeconds, meta.Revision)
		}
		if _, _, err := registry.LoadRevision(ctx, st, meta.Revision); err != nil {
			t.Fatalf("kill %d: current revision %d not loadable by revision: %v", i, meta.Revision, err)
		}
		// The lock is usable: this process can write next.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, m, err := registry.Update(wctx, st, "after kill", incrementCounter)
		cancel()
		if err != nil {
			t.Fatalf("kill %d: write after kill: %v", i, err)
		}
		last = m.Revision
	}
	if _, err := registry.History(ctx, st); err != nil {
		t.Fatalf("history after kills: %v", err)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, ".tmp~*"))
	t.Logf("%d kills left a temporary file behind (killed mid-write)", len(temps))
}
