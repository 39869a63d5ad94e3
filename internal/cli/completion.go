package cli

import "github.com/spf13/cobra"

// addCompletionCommand adds cobra's `completion bash|zsh|fish|powershell`
// now rather than when root runs, so that it gets an example like every
// other command.
func addCompletionCommand(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			cmd.Example = `  source <(profilesync completion bash)                      # this shell only
  profilesync completion bash > /etc/bash_completion.d/profilesync
  profilesync completion zsh > "${fpath[1]}/_profilesync"
  profilesync completion fish > ~/.config/fish/completions/profilesync.fish`
		}
	}
}
