package cli

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/wisent/stado/refusal"
	"github.com/wisent/stado/registry"
	"github.com/wisent/stado/store"
)

type codedErr struct{}

func (codedErr) Error() string             { return "coded" }
func (codedErr) RefusalCode() refusal.Code { return refusal.DeclarationIncomplete }

func TestExitCodeTableMapsEveryErrorClass(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		code    int
		machine string
	}{
		// success has no machine code
		{"nil", nil, ExitOK, ""},
		// a wrong command line is a usage error
		{"usage", usagef("missing FILE"), ExitUsage, "usage"},
		// a refusal keeps its own stable code, even wrapped
		{"refusal", fmt.Errorf("ensure: %w", refuse("not_found", "no such service")), ExitRefused, "not_found"},
		// validation errors are refusals with code validation
		{"validation", &registry.ValidationError{Violations: []registry.Violation{{Path: "version", Message: "must be 1"}}}, ExitRefused, "validation"},
		// a conflict from the store is a refusal
		{"conflict", fmt.Errorf("push: %w", &store.ConflictError{Key: "registry/document", Want: 1, Got: 2}), ExitRefused, "conflict"},
		// an absent object is a refusal
		{"not found", fmt.Errorf("get: %w", store.ErrNotFound), ExitRefused, "not_found"},
		// domain packages name their code through RefusalCode
		{"coded", fmt.Errorf("render: %w", codedErr{}), ExitRefused, "declaration_incomplete"},
		// anything else is a plain failure
		{"other", errors.New("disk on fire"), ExitFailure, "failure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, machine := exitCode(tc.err)
			if code != tc.code || machine != tc.machine {
				t.Fatalf("exitCode(%v) = %d, %q; want %d, %q", tc.err, code, machine, tc.code, tc.machine)
			}
		})
	}
}

// The exit-code table knows refusal codes and nothing else: it imports no
// domain package to learn which errors are refusals.
func TestTheExitCodeTableKnowsOnlyRefusalCodes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range f.Imports {
		if p := strings.Trim(im.Path.Value, `"`); strings.HasPrefix(p, "github.com/wisent/stado/") && p != "github.com/wisent/stado/refusal" {
			t.Errorf("errors.go imports %s", p)
		}
	}
}
