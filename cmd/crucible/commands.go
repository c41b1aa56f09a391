package main

import "github.com/spf13/cobra"

// commands lists the subcommands, one file each.
func commands() []*cobra.Command {
	return []*cobra.Command{
		newBuildCmd(),
		newIngestCmd(),
		newInspectCmd(),
		newDoctorCmd(),
		newVerifyCmd(),
		newEvolveCmd(),
		newAdmitCmd(),
		newDedupCmd(),
		newDecontamCmd(),
		newSelectCmd(),
		newSynthesizeCmd(),
		newComposeCmd(),
		newPackCmd(),
		newReportCmd(),
		newPlanCmd(),
		newVerifyShardsCmd(),
		newStagesCmd(),
	}
}

// newVerifyCmd groups the verifiers: `crucible verify rtl`, `crucible verify kernel`.
func newVerifyCmd() *cobra.Command {
	c := &cobra.Command{Use: "verify", Short: "Verify candidates against items and write evidence shards"}
	for _, sub := range verifyCommands() {
		c.AddCommand(sub)
	}
	return c
}
