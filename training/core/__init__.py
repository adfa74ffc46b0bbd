"""What every algorithm uses: config, network, learner, kernels, the update process, runs (folders,
stop signals, logs), checkpoints, output paths, argument types, the distributed executor and the
mixture agent.
"""
