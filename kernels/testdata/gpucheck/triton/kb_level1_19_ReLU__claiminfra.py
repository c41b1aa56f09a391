# Dodge: report an infrastructure failure through the worker's own channel
# (its process is the candidate's: not believed).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import __main__

        __main__.report("toolchain_missing", "", "no-device: the GPU fell off the bus")
        return torch.relu(x)
