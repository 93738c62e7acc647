# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.
#
# This source code is licensed under the BSD-style license found in the
# LICENSE file in the root directory of this source tree.

"""Coding environment server components."""

from .python_codeact_env import PythonCodeActEnv

__all__ = ["PythonCodeActEnv"]
