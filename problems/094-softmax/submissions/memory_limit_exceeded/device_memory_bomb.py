# Allocates memory where its input lives until something gives: on a GPU, device memory up to its worker's
# cap ([limits] gpu_memory_mb), which is its MLE and no other judge's failure (the memory it may take was
# reserved for it: judge.gpu_admission); in the interpreter, host memory up to [limits] memory_mb.
# expect: memory
import torch


def softmax(x):
    hoard = []
    while True:
        hoard.append(torch.ones(64 << 20, dtype=torch.float32, device=x.device))
