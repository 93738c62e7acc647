# Copyright (c) Meta Platforms, Inc. and affiliates.
# All rights reserved.
#
# This source code is licensed under the BSD-style license found in the
# LICENSE file in the root directory of this source tree.

"""Chess Environment server module."""

from .chess_environment import ChessEnvironment

__all__ = ["ChessEnvironment"]
