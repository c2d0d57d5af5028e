"""Stands in for torchaudio in the LLaMA Factory test environment.

LLaMA Factory imports torchaudio at module level for audio datasets only; PyPI's torchaudio links
CUDA libraries that the CPU torch wheel lacks, so the environment uninstalls it (see noxfile.py).
"""
