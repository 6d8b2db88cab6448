package completion

import (
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func tree() *ucli.App {
	return &ucli.App{Name: "stado", Flags: []ucli.Flag{&ucli.StringFlag{Name: "store"}}, Commands: []*ucli.Command{
		{Name: "service", Subcommands: []*ucli.Command{
			{Name: "ensure", UsageText: "stado service ensure NAME (--host HOST... | --all) [--dry-run]\n\nexample:\n   x",
				Flags: []ucli.Flag{&ucli.StringSliceFlag{Name: "host"}, &ucli.BoolFlag{Name: "dry-run"}, &ucli.StringFlag{Name: "env"}}},
			{Name: "verify", UsageText: "stado service verify [NAME] [--host HOST...]"},
			{Name: "secret", Hidden: true},
		}},
		{Name: "release", Subcommands: []*ucli.Command{{Name: "publish", ArgsUsage: "PRODUCT VERSION FILE"}}},
	}}
}

func TestCompleteOffersWhatTheLineTakesNext(t *testing.T) {
	names := Names{Hosts: []string{"h2", "h1"}, Services: []string{"brama", "api", "brama"}, Products: []string{"brama"}}
	cases := []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"release", "service"}},                                          // top-level commands
		{[]string{"service", ""}, []string{"ensure", "verify"}},                                 // a group's, hidden left out
		{[]string{"service", "ensure", ""}, []string{"api", "brama"}},                           // NAME, sorted, once each
		{[]string{"service", "ensure", "--host", ""}, []string{"h1", "h2"}},                     // a flag's value
		{[]string{"service", "ensure", "--host=h1", "--dry-run", ""}, []string{"api", "brama"}}, // flags do not count as arguments
		{[]string{"service", "ensure", "--env", ""}, nil},                                       // a value no registry holds
		{[]string{"service", "ensure", "api", ""}, nil},                                         // no second argument
		{[]string{"service", "ensure", "--d"}, []string{"--dry-run"}},                           // flags by prefix
		{[]string{"service", "verify", ""}, []string{"api", "brama"}},                           // an optional [NAME]
		{[]string{"release", "publish", ""}, []string{"brama"}},                                 // PRODUCT from ArgsUsage
		{[]string{"release", "publish", "brama", ""}, nil},                                      // VERSION: nothing to offer
		{[]string{"--store", "file:///x", "serv"}, []string{"service"}},                         // a global flag's value is skipped
	}
	for _, c := range cases {
		if got := Complete(tree(), c.words, func() Names { return names }); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.words, got, c.want)
		}
	}
}

func TestCompleteAsksForNamesOnlyWhenItOffersThem(t *testing.T) {
	asked := 0
	Complete(tree(), []string{"service", "en"}, func() Names { asked++; return Names{} })
	Complete(tree(), []string{"service", "ensure", "--d"}, func() Names { asked++; return Names{} })
	if asked != 0 {
		t.Errorf("names read %d times for commands and flags", asked)
	}
}

func TestScriptIsWrittenForEachShellAndRefusedForOthers(t *testing.T) {
	for _, sh := range Shells {
		s, err := Script(sh, "stado")
		if err != nil || !strings.Contains(s, "stado __complete --") {
			t.Errorf("%s: %v\n%s", sh, err, s)
		}
	}
	if _, err := Script("tcsh", "stado"); err == nil || !strings.Contains(err.Error(), "bash, zsh, fish") {
		t.Errorf("tcsh: %v", err)
	}
}
