package fleet

import (
	"errors"
	"testing"

	"github.com/wisent/stado/catalog"
	"github.com/wisent/stado/channel"
	"github.com/wisent/stado/registry"
)

func TestFanOutErrorPrefersAFailureOverARefusal(t *testing.T) {
	refused := NotManaged("api", "h1")
	failed := &channel.RemoteError{Host: "h2", Stage: channel.StageConnect, Err: errors.New("connection refused")}
	order := []string{"h1", "h2", "h3"}
	if err := FanOutError("x", map[string]error{"h1": nil, "h3": nil}, order); err != nil {
		t.Errorf("all ok: %v", err)
	}
	if _, refusedAll := Classify(FanOutError("x", map[string]error{"h1": refused, "h2": failed}, order)); refusedAll {
		t.Errorf("refusal and failure read as a refusal")
	}
	if code, r := Classify(FanOutError("x", map[string]error{"h1": refused}, order)); !r || code != "not_found" {
		t.Errorf("one refusal: %s %v", code, r)
	}
}

// The catalog declaration ensure records when a host declares nothing
// carries the product's unit and program.
func TestEnsurePlanFromTheCatalog(t *testing.T) {
	cat := catalog.Shipped()
	p := planEnsure(cat, registry.Target{Name: "h", OS: "linux"}, EnsureOptions{Name: "brama"})
	prod, _ := cat.Lookup("brama")
	if !p.fromCatalog || p.service.Unit != prod.Units.Systemd || p.service.Program != prod.Program || p.service.Product != "brama" {
		t.Errorf("plan %+v", p)
	}
	if missing := prod.MissingEnv(p.service.Env); len(missing) > 0 && p.refused == nil {
		t.Errorf("product needs %v and the plan is not refused", missing)
	}
}
