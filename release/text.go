package release

import "fmt"

// The human form of the release core's results, for the commands' text
// output (--json prints the results themselves).

// KeyGenerated is what `release key generate` made.
type KeyGenerated struct {
	PublicKey  string `json:"public_key"`
	PrivateKey string `json:"private_key"`
	KeyID      string `json:"key_id"`
	Encrypted  bool   `json:"encrypted"`
}

// Lines of a generated key pair, with where hosts pin the public half.
func (k KeyGenerated) Lines() []string {
	enc := "encrypted with $" + PasswordEnv
	if !k.Encrypted {
		enc = "NOT encrypted: " + PasswordEnv + " was empty"
	}
	return []string{
		"release key " + k.KeyID,
		"  public   " + k.PublicKey + "  (pin it on each host under the release keys directory, e.g. " + KeysDir(SystemRoot) + "/)",
		"  private  " + k.PrivateKey + "  (" + enc + "; keep it off the hosts)",
	}
}

// Lines of a publish: the build, its digests and the chunks written.
func (r PublishResult) Lines() []string {
	head := "published"
	if r.Unchanged {
		head = "already published (unchanged)"
	}
	return []string{
		fmt.Sprintf("%s %s %s for %s/%s", head, r.Product, r.Version, r.OS, r.Arch),
		fmt.Sprintf("  sha256    %s (%d bytes)", r.SHA256, r.Size),
		fmt.Sprintf("  manifest  %s sha256 %s", r.Key, r.ManifestSHA256),
		fmt.Sprintf("  signed by %s", r.Publisher),
		fmt.Sprintf("  chunks    %d: %d written, %d reused", r.Chunks, r.ChunksWritten, r.ChunksReused),
	}
}

// Lines of a prune: what was (or would be) deleted and kept, and the
// chunks freed.
func (r PruneResult) Lines() []string {
	verb, sum := "deleted", "deleted"
	if r.DryRun {
		verb, sum = "would delete", "to delete"
	}
	var out []string
	for _, d := range r.Deleted {
		out = append(out, fmt.Sprintf("%s %s %s %s/%s", verb, d.Product, d.Version, d.OS, d.Arch))
	}
	for _, k := range r.Kept {
		out = append(out, fmt.Sprintf("kept %s %s %s/%s (%s)", k.Product, k.Version, k.OS, k.Arch, k.Why))
	}
	out = append(out, fmt.Sprintf("%d manifest(s) %s, %d kept; %d chunk(s) %s, %d bytes", len(r.Deleted), sum, len(r.Kept), r.ChunksDeleted, sum, r.BytesFreed))
	return out
}
