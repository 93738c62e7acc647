# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.
#
# This source code is licensed under the BSD-style license found in the
# LICENSE file in the root directory of this source tree.

"""Coding Environment - A Python code execution environment."""

from .client import CodingEnv
from .models import CodeAction, CodeObservation, CodeState

__all__ = ["CodingEnv", "CodeAction", "CodeObservation", "CodeState"]
