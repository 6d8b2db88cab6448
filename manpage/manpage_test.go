package manpage

import (
	"bytes"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func app() *ucli.App {
	return &ucli.App{Name: "stado", Usage: "keep services", Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Usage: "print *JSON*"}}, Commands: []*ucli.Command{
		{Name: "version", Usage: "print the version", UsageText: "stado version\n\nexample:\n   stado version"},
		{Name: "service", Usage: "services", Subcommands: []*ucli.Command{
			{Name: "show", Usage: "show one [NAME]", UsageText: "stado service show NAME_1 *x*\n\nexample:\n   stado service show brama"},
			{Name: "unit", Usage: "units", Subcommands: []*ucli.Command{{Name: "show", Usage: "show a unit"}}},
			{Name: "hidden", Hidden: true, Usage: "not documented"},
		}},
		{Name: "host", Usage: "hosts", Subcommands: []*ucli.Command{{Name: "show", Usage: "show a host"}}},
	}}
}

func TestEachGroupHasAPageAndEachCommandASectionByItsPath(t *testing.T) {
	pages := Render(app(), "1.0")
	var names []string
	byName := map[string]string{}
	for _, p := range pages {
		names = append(names, p.File())
		byName[p.Name] = string(p.Roff)
	}
	if strings.Join(names, " ") != "stado.1 stado-host.1 stado-service.1" {
		t.Fatalf("pages %q", names)
	}
	for page, sections := range map[string][]string{
		"stado":         {".SS stado version"},
		"stado-service": {".SS stado service show", ".SS stado service unit", ".SS stado service unit show"},
		"stado-host":    {".SS stado host show"},
	} {
		for _, s := range sections {
			if !strings.Contains(byName[page], "\n"+s+"\n") {
				t.Errorf("%s(1) lacks %q:\n%s", page, s, byName[page])
			}
		}
	}
	if strings.Contains(byName["stado-service"], "hidden") {
		t.Error("a hidden command is documented")
	}
	if PageOf(app(), "stado service unit show") != "stado-service" || PageOf(app(), "stado version") != "stado" {
		t.Error("PageOf names the wrong page")
	}
}

func TestHelpTextIsKeptLiteralAndRenderingIsDeterministic(t *testing.T) {
	a, b := Render(app(), "1.0"), Render(app(), "1.0")
	for i := range a {
		if !bytes.Equal(a[i].Roff, b[i].Roff) {
			t.Errorf("%s renders differently twice", a[i].File())
		}
	}
	svc := string(a[2].Roff)
	for _, want := range []string{"stado service show NAME_1 *x*", "show one [NAME]"} {
		if !strings.Contains(svc, want) {
			t.Errorf("stado-service(1) does not keep %q literally:\n%s", want, svc)
		}
	}
	if !strings.Contains(string(a[0].Roff), "print *JSON*") {
		t.Errorf("a flag's usage is not kept literally:\n%s", a[0].Roff)
	}
}
