package etcdstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Tests reach etcd past the store with raw gateway calls: post sends req
// to path on the member at baseURL (http://HOST:PORT) and decodes the
// answer into resp, or returns the error etcd answered with.
func post(ctx context.Context, baseURL, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		var re rpcError
		if json.Unmarshal(data, &re) == nil && re.Message != "" {
			return &re
		}
		return fmt.Errorf("%s: %s: %s", path, r.Status, data)
	}
	return json.Unmarshal(data, resp)
}

// mustPost is post failing t.
func mustPost(t testing.TB, baseURL, path string, req, resp any) {
	t.Helper()
	if err := post(context.Background(), baseURL, path, req, resp); err != nil {
		t.Fatalf("%s %s: %v", baseURL, path, err)
	}
}

// rawGet reads an etcd key past the store, to see what etcd holds.
func rawGet(t *testing.T, st *Store, key string) rangeResponse {
	t.Helper()
	var resp rangeResponse
	mustPost(t, st.c.urls[0], "/v3/kv/range", rangeRequest{Key: []byte(st.base + key)}, &resp)
	return resp
}

// leaseCount is how many leases the cluster holds.
func leaseCount(t testing.TB, st *Store) int {
	t.Helper()
	var resp struct {
		Leases []struct {
			ID int64 `json:"ID,string"`
		} `json:"leases"`
	}
	mustPost(t, st.c.urls[0], "/v3/lease/leases", struct{}{}, &resp)
	return len(resp.Leases)
}

// memberStatus is a member's /v3/maintenance/status.
type memberStatus struct {
	Header responseHeader `json:"header"`
	Leader uint64         `json:"leader,string"`
}
