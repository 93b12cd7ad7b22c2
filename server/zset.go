package server

// zsetCommands returns the zset commands.
func zsetCommands() []*command {
	return []*command{}
}
