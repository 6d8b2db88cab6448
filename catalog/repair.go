package catalog

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/wisent/stado/refusal"
)

// RepairStep is one entry of the repair catalog: a fixed host payload per
// OS that a standing answering question (or an operator) runs before the
// restart.
type RepairStep struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Needs names environment variables the caller must hand the step
	// (for example SKARBIEC_READY_WITHIN_SECONDS); a caller that cannot is
	// refused with a *NeedError naming the first missing one.
	Needs  []string `json:"needs,omitempty" yaml:"needs,omitempty"`
	Linux  *Payload `json:"linux,omitempty" yaml:"linux,omitempty"`
	Darwin *Payload `json:"darwin,omitempty" yaml:"darwin,omitempty"`
	// Origin is OriginShipped or OriginSite.
	Origin string `json:"origin" yaml:"origin"`
}

// Payload is what a step runs on one OS: an argv array with an absolute
// program (never a shell string), the environment it adds and its bound.
type Payload struct {
	Argv           []string          `json:"argv" yaml:"argv"`
	Env            map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds" yaml:"timeout_seconds"`
}

// Timeout returns the payload's bound as a duration.
func (p *Payload) Timeout() time.Duration { return time.Duration(p.TimeoutSeconds) * time.Second }

// For returns the payload for os (registry.OSLinux or registry.OSDarwin),
// or false when the step has none there.
func (s *RepairStep) For(os string) (*Payload, bool) {
	var p *Payload
	switch os {
	case "linux":
		p = s.Linux
	case "darwin":
		p = s.Darwin
	}
	return p, p != nil
}

// Command is a payload made ready to run: argv, the complete environment
// the step adds (payload env plus the caller's inputs) and the bound.
type Command struct {
	Step    string            `json:"step"`
	OS      string            `json:"os"`
	Argv    []string          `json:"argv"`
	Env     map[string]string `json:"env,omitempty"`
	Timeout time.Duration     `json:"-"`
	// TimeoutSeconds mirrors Timeout for JSON reports.
	TimeoutSeconds int `json:"timeout_seconds"`
}

// NeedError refuses a step whose caller did not supply a variable the step
// needs. Its RefusalCode is "repair_input_missing".
type NeedError struct {
	Step     string
	Variable string
}

func (e *NeedError) Error() string {
	return fmt.Sprintf("repair step %s needs %s from its caller, and none was given", e.Step, e.Variable)
}

// RefusalCode is the stable machine code the CLI reports.
func (e *NeedError) RefusalCode() refusal.Code { return refusal.InputMissing }

// NoPayloadError refuses a step that has no payload for the host's OS. Its
// RefusalCode is "repair_step_unsupported".
type NoPayloadError struct {
	Step string
	OS   string
}

func (e *NoPayloadError) Error() string {
	return fmt.Sprintf("repair step %s has no payload for %s", e.Step, e.OS)
}

// RefusalCode is the stable machine code the CLI reports.
func (e *NoPayloadError) RefusalCode() refusal.Code { return refusal.StepUnsupported }

// Command resolves the step for os with the caller's inputs. Every name in
// Needs must be present in inputs with a non-empty value, or a *NeedError
// names the first one missing; a step with no payload for os returns a
// *NoPayloadError. Only the needed names are taken from inputs. It touches
// nothing; running the command is the caller's business.
func (s *RepairStep) Command(os string, inputs map[string]string) (Command, error) {
	p, ok := s.For(os)
	if !ok {
		return Command{}, &NoPayloadError{Step: s.Name, OS: os}
	}
	env := maps.Clone(p.Env)
	if env == nil && len(s.Needs) > 0 {
		env = map[string]string{}
	}
	for _, name := range s.Needs {
		v := inputs[name]
		if v == "" {
			return Command{}, &NeedError{Step: s.Name, Variable: name}
		}
		env[name] = v
	}
	return Command{
		Step:           s.Name,
		OS:             os,
		Argv:           slices.Clone(p.Argv),
		Env:            env,
		Timeout:        p.Timeout(),
		TimeoutSeconds: p.TimeoutSeconds,
	}, nil
}
