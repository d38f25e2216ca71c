package app

import (
	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/version"
)

// newVersionCommand prints the build identity (also available as --version).
func newVersionCommand(streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print meshbench's version, git commit, Go version and build date",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, _ := cmd.Flags().GetString("output")
			return printValue(streams.Out, out, version.Get(), func() string {
				v := version.Get()
				return "meshbench " + v.Version + "\n  commit:     " + v.Commit + "\n  go:         " + v.GoVersion +
					"\n  built:      " + v.BuildDate + "\n  platform:   " + v.Platform + "\n"
			})
		},
	}
}
