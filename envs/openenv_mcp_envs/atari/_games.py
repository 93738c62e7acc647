"""What each of the most played Atari games is, and what its actions do in it.

Written for a model playing through MCP; every claim about an action's effect was
checked against the emulator, and ``tests/envs/test_atari_games.py`` checks it again
(a RAM byte or the screen: Pong's paddle goes up on RIGHT). Games not listed here get
a generic description (:func:`describe`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GAMES", "Game"]


@dataclass(frozen=True)
class Game:
    """One game, for a model: what it is, how it scores, how to start, what each action does."""

    title: str
    summary: str
    scoring: str
    start: str
    #: ALE action name -> what it does in this game, for the game's minimal action set.
    actions: dict[str, str]
    #: Lives at the start (``None``: the game has none).
    lives: int | None
    #: What to do after a lost life, where the game waits for it.
    after_life_lost: str = ""
    #: How a positive and a negative reward read, where they are not plain points.
    points: tuple[str, str] | None = None


GAMES: dict[str, Game] = {
    "pong": Game(
        title="Pong (Video Olympics)",
        summary=(
            "Table tennis against the computer. You control the green paddle on the RIGHT "
            "side of the screen (the orange left paddle is the CPU); return the ball and "
            "get it past the opponent's paddle. A game ends when one side reaches 21 "
            "points."
        ),
        scoring=(
            "+1 reward each time the CPU misses the ball (you score), -1 each time you "
            "miss. Episode return therefore ranges from -21 to +21."
        ),
        start=(
            "No FIRE needed: the ball is served automatically (the first serve comes "
            "about 15 steps after reset) and after every point. The paddle responds from "
            "step 0."
        ),
        actions={
            "NOOP": "do nothing (paddle stays where it is)",
            "FIRE": "no effect",
            "RIGHT": "move your paddle UP the screen",
            "LEFT": "move your paddle DOWN the screen",
            "RIGHTFIRE": "same as RIGHT: paddle moves UP",
            "LEFTFIRE": "same as LEFT: paddle moves DOWN",
        },
        lives=None,
        points=("You scored a point", "The opponent scored a point"),
    ),
    "breakout": Game(
        title="Breakout",
        summary=(
            "Move the paddle along the bottom to bounce the ball into the wall of "
            "coloured bricks at the top; each brick hit disappears. You lose a life "
            "whenever the ball falls past the paddle."
        ),
        scoring=(
            "Reward per brick destroyed; the lowest rows give +1 (observed). Higher rows "
            "are worth more (see unverified)."
        ),
        start=(
            "Press FIRE to launch (serve) the ball; nothing happens otherwise (200 NOOP "
            "steps: no ball, no reward, no life lost). After each lost life the ball "
            "stays gone until FIRE is pressed again. The paddle can be moved before "
            "serving."
        ),
        actions={
            "NOOP": "do nothing",
            "FIRE": "launch the ball (only needed when no ball is in play)",
            "RIGHT": "move the paddle right",
            "LEFT": "move the paddle left",
        },
        lives=5,
        after_life_lost="press FIRE to serve the next ball",
    ),
    "space_invaders": Game(
        title="Space Invaders",
        summary=(
            "Move a laser cannon along the bottom of the screen and shoot the rows of "
            "invaders marching down towards you, hiding behind shields; invaders shoot "
            "back. You lose a life when hit."
        ),
        scoring=(
            "Reward per invader shot; observed values 5, 10, 15, 20, 25, 30 (different "
            "rows are worth different amounts)."
        ),
        start=(
            "No FIRE needed: the invaders start moving and shooting on their own (with "
            "NOOP only, the first life is lost after ~175 steps). The cannon responds to "
            "input from step 32 after reset; after a lost life play resumes by itself."
        ),
        actions={
            "NOOP": "do nothing",
            "FIRE": "shoot a laser straight up from the cannon",
            "RIGHT": "move the cannon right",
            "LEFT": (
                "move the cannon left (the cannon starts at the left edge, so LEFT does "
                "nothing at first)"
            ),
            "RIGHTFIRE": "move right and shoot",
            "LEFTFIRE": "move left and shoot",
        },
        lives=3,
    ),
    "ms_pacman": Game(
        title="Ms. Pac-Man",
        summary=(
            "Guide Ms. Pac-Man through the maze eating all the pellets while avoiding the "
            "four ghosts; eating a flashing power pellet briefly makes the ghosts edible. "
            "Clearing all pellets advances to the next maze."
        ),
        scoring=(
            "+10 per pellet (observed). Power pellets, eaten ghosts and bouncing fruit "
            "give more (see unverified)."
        ),
        start=(
            "No FIRE (not in the action set). There is an intro: Ms. Pac-Man first "
            "responds to input at step 66 after reset and then starts moving LEFT on her "
            "own. She keeps moving in her current direction until a wall, so NOOP does "
            "not stop her. After a lost life play resumes by itself."
        ),
        actions={
            "NOOP": "keep moving in the current direction (no stopping)",
            "UP": "turn/move up at the next opening",
            "RIGHT": "move right (reverses immediately if moving left)",
            "LEFT": "move left",
            "DOWN": "turn/move down at the next opening",
            "UPRIGHT": "combination of UP and RIGHT: takes whichever of the two is open",
            "UPLEFT": "combination of UP and LEFT: takes whichever of the two is open",
            "DOWNRIGHT": "combination of DOWN and RIGHT: takes whichever of the two is open",
            "DOWNLEFT": "combination of DOWN and LEFT: takes whichever of the two is open",
        },
        lives=3,
    ),
    "seaquest": Game(
        title="Seaquest",
        summary=(
            "Command a submarine: shoot sharks and enemy subs, pick up swimming divers, "
            "and return to the surface before the oxygen bar runs out. Surfacing with 6 "
            "divers completes a level."
        ),
        scoring=(
            "+20 per shark/enemy sub at the start (observed; 40 was also observed). "
            "Surfacing bonuses depend on divers and remaining oxygen (see unverified)."
        ),
        start=(
            "No FIRE needed. The sub starts at the surface and responds to input from "
            "step 31 after reset. Staying at the surface with NOOP does not lose lives "
            "(4000 steps checked); you must dive (DOWN) to play. After a lost life the "
            "new sub is controllable again about 60 steps later, without FIRE."
        ),
        actions={
            "NOOP": "do nothing (sub stays put)",
            "FIRE": "fire a torpedo horizontally in the direction the sub faces",
            "UP": "move up",
            "RIGHT": "move right (and face right)",
            "LEFT": "move left (and face left)",
            "DOWN": "move down (dive)",
            "UPRIGHT": "move up and right",
            "UPLEFT": "move up and left",
            "DOWNRIGHT": "move down and right",
            "DOWNLEFT": "move down and left",
            "UPFIRE": "move up + fire",
            "RIGHTFIRE": "move right + fire",
            "LEFTFIRE": "move left + fire",
            "DOWNFIRE": "move down + fire",
            "UPRIGHTFIRE": "move up-right + fire",
            "UPLEFTFIRE": "move up-left + fire",
            "DOWNRIGHTFIRE": "move down-right + fire",
            "DOWNLEFTFIRE": "move down-left + fire",
        },
        lives=4,
    ),
    "freeway": Game(
        title="Freeway",
        summary=(
            "Help the chicken (left side) cross a ten-lane highway from bottom to top as "
            "many times as possible before the timer (2 min 16 s) runs out."
        ),
        scoring=(
            "+1 for each completed crossing (observed; the chicken then restarts at the "
            "bottom). No negative rewards."
        ),
        start=(
            "No FIRE (not in the action set); the chicken responds from step 0. The "
            "episode always ends after 2048 steps (8192 frames)."
        ),
        actions={
            "NOOP": "stand still",
            "UP": "move the chicken up (forward across the road)",
            "DOWN": "move the chicken back down (does nothing at the bottom kerb)",
        },
        lives=None,
    ),
    "enduro": Game(
        title="Enduro",
        summary=(
            "Endurance car race seen from behind your car: drive along the road and "
            "overtake as many cars as possible; each day you must pass a quota of cars "
            "(the counter at the bottom starts at 200 on day 1)."
        ),
        scoring="+1 for each car you pass, -1 each time a car passes you (both observed).",
        start=(
            "Your car stands still until you accelerate with FIRE (200 steps of NOOP: no "
            "reward, speed stays 0). FIRE acts from step 1; steering works from step 0."
        ),
        actions={
            "NOOP": (
                "no pedal: the car keeps its current speed (no slow-down seen over 16 "
                "steps); at a standstill it stays stopped"
            ),
            "FIRE": "accelerate (gas)",
            "RIGHT": "steer right (the car moves right on screen)",
            "LEFT": "steer left (the car moves left on screen)",
            "DOWN": "brake (speed decreases)",
            "DOWNRIGHT": "brake + steer right",
            "DOWNLEFT": "brake + steer left",
            "RIGHTFIRE": "accelerate + steer right",
            "LEFTFIRE": "accelerate + steer left",
        },
        lives=None,
    ),
    "qbert": Game(
        title="Q*bert",
        summary=(
            "Hop Q*bert from cube to cube on a pyramid; each landing changes the cube's "
            "top colour, and turning every cube to the target colour clears the round. "
            "Avoid Coily and the bouncing balls; jumping off the pyramid's edge costs a "
            "life."
        ),
        scoring="+25 per cube top changed (observed). Other bonuses: see unverified.",
        start=(
            "No FIRE needed (FIRE has no effect at all). Q*bert starts on the top cube "
            "and responds to input from step 38 after reset. From the top cube only RIGHT "
            "and DOWN are safe: UP or LEFT jumps off the pyramid. One hop takes about 6-8 "
            "steps; holding a direction repeats hops."
        ),
        actions={
            "NOOP": "stay on the current cube",
            "FIRE": "no effect",
            "UP": "hop diagonally UP-RIGHT (towards the top-right)",
            "RIGHT": "hop diagonally DOWN-RIGHT",
            "LEFT": "hop diagonally UP-LEFT",
            "DOWN": "hop diagonally DOWN-LEFT",
        },
        lives=4,
    ),
    "asteroids": Game(
        title="Asteroids",
        summary=(
            "Pilot a ship in the middle of an asteroid field: rotate, thrust and shoot. "
            "Shot asteroids split into smaller pieces; colliding with one costs a life."
        ),
        scoring=(
            "Observed rewards 20, 50 and 100 per asteroid (larger asteroids are worth "
            "less; exact size mapping unverified)."
        ),
        start=(
            "No FIRE needed; the ship responds from step 0 (it starts pointing up). After "
            "a lost life a new ship appears by itself (can take 100+ steps)."
        ),
        actions={
            "NOOP": "do nothing (the ship keeps drifting with its current velocity)",
            "FIRE": (
                "shoot one missile in the facing direction; holding FIRE does not "
                "autofire (release and press again for the next shot)"
            ),
            "UP": "thrust forward in the direction the ship points",
            "RIGHT": "rotate clockwise",
            "LEFT": "rotate counter-clockwise",
            "DOWN": "hyperspace: the ship vanishes and reappears at another place",
            "UPRIGHT": "thrust + rotate clockwise",
            "UPLEFT": "thrust + rotate counter-clockwise",
            "UPFIRE": "thrust + fire",
            "RIGHTFIRE": "rotate clockwise + fire",
            "LEFTFIRE": "rotate counter-clockwise + fire",
            "DOWNFIRE": "hyperspace + fire",
            "UPRIGHTFIRE": "thrust + rotate clockwise + fire",
            "UPLEFTFIRE": "thrust + rotate counter-clockwise + fire",
        },
        lives=4,
    ),
    "montezuma_revenge": Game(
        title="Montezuma's Revenge",
        summary=(
            "Platform adventure: guide Panama Joe through the rooms of an Aztec pyramid, "
            "collecting keys, jewels and items, opening doors and avoiding skulls, "
            "snakes, lasers and deadly falls. In the first room the goal is to reach the "
            "key."
        ),
        scoring=(
            "Very sparse: no reward at all in 3000 random steps. Points come from items "
            "(key, jewels, etc.), opened doors and killed enemies (values unverified)."
        ),
        start=(
            "No FIRE needed; Panama Joe responds from step 0. He starts on a small ledge "
            "at the top of a ladder in the middle of the first room: holding LEFT or "
            "RIGHT for ~9 steps walks off the ledge and the fall costs a life. Use DOWN "
            "to climb down the ladder. After a death he respawns by himself."
        ),
        actions={
            "NOOP": "stand still",
            "FIRE": "jump straight up",
            "UP": "climb up a ladder/rope (no effect where there is none, e.g. on the start ledge)",
            "RIGHT": "walk right",
            "LEFT": "walk left",
            "DOWN": "climb down a ladder/rope (at the start: down the ladder below you)",
            "UPRIGHT": "on the start ledge: same as RIGHT (walk right)",
            "UPLEFT": "on the start ledge: same as LEFT (walk left)",
            "DOWNRIGHT": "on the start ledge: same as RIGHT (walk right, does not take the ladder)",
            "DOWNLEFT": "on the start ledge: same as LEFT (walk left, does not take the ladder)",
            "UPFIRE": "jump straight up",
            "RIGHTFIRE": "jump to the right",
            "LEFTFIRE": "jump to the left",
            "DOWNFIRE": "at the top of the ladder: climbs down (no jump)",
            "UPRIGHTFIRE": "jump to the right",
            "UPLEFTFIRE": "jump to the left",
            "DOWNRIGHTFIRE": "jump to the right",
            "DOWNLEFTFIRE": "jump to the left",
        },
        lives=6,
    ),
    "boxing": Game(
        title="Boxing",
        summary=(
            "Top-down boxing match: your boxer (white, starts top-left) against the CPU "
            "(black). Land punches on the opponent's head; a knockout comes at 100 "
            "points, otherwise the round ends after 2 minutes."
        ),
        scoring=(
            "Reward = change in (your points - opponent's points): observed +1/+2 for "
            "your punches and -1/-2 for the opponent's. Without a KO the episode lasts "
            "1786 steps."
        ),
        start="No FIRE needed; the fight starts at reset and your boxer responds from step 0.",
        actions={
            "NOOP": "stand still",
            "FIRE": "punch (the arm extends towards the opponent)",
            "UP": "move up",
            "RIGHT": "move right",
            "LEFT": "move left",
            "DOWN": "move down",
            "UPRIGHT": "move up-right",
            "UPLEFT": "move up-left",
            "DOWNRIGHT": "move down-right",
            "DOWNLEFT": "move down-left",
            "UPFIRE": "move up + punch",
            "RIGHTFIRE": "move right + punch",
            "LEFTFIRE": "move left + punch",
            "DOWNFIRE": "move down + punch",
            "UPRIGHTFIRE": "move up-right + punch",
            "UPLEFTFIRE": "move up-left + punch",
            "DOWNRIGHTFIRE": "move down-right + punch",
            "DOWNLEFTFIRE": "move down-left + punch",
        },
        lives=None,
        points=("You landed a punch", "Your opponent landed a punch"),
    ),
    "beam_rider": Game(
        title="Beam Rider",
        summary=(
            "Your ship moves between 5 beams at the bottom of a 3-D grid. Each sector, "
            "destroy 15 white enemy saucers with the laser, then a sentinel ship crosses "
            "the top, which only torpedoes can hit. Dodge or shoot the other objects."
        ),
        scoring=(
            "+44 per white saucer in sector 1 (observed); other objects and sector "
            "bonuses unverified."
        ),
        start=(
            "No FIRE needed to begin: after an intro the ship responds from step 59 and "
            "the enemies attack by themselves. After a life is lost the game PAUSES until "
            "a joystick direction (LEFT, RIGHT, UP or a combination) is pressed; FIRE "
            "alone does NOT resume play."
        ),
        actions={
            "NOOP": "do nothing",
            "FIRE": "shoot the laser up the current beam (holding FIRE keeps firing)",
            "UP": "fire a torpedo up the current beam (3 torpedoes per sector)",
            "RIGHT": "move to the beam on the right (a tap moves one beam; holding keeps moving)",
            "LEFT": "move to the beam on the left",
            "UPRIGHT": "move right + fire a torpedo",
            "UPLEFT": "move left + fire a torpedo",
            "RIGHTFIRE": "move right + laser",
            "LEFTFIRE": "move left + laser",
        },
        lives=3,
        after_life_lost="press LEFT or RIGHT to resume (FIRE alone does not)",
    ),
    "pitfall": Game(
        title="Pitfall!",
        summary=(
            "Run Pitfall Harry through a jungle of side-by-side screens (and the tunnels "
            "below) to collect treasures within 20 minutes, jumping over holes, logs, tar "
            "pits and crocodiles and swinging on vines."
        ),
        scoring=(
            "Score starts at 2000 (on screen); ALE reward is the change. Falling into the "
            "ladder hole on the first screen gives -100; small negative rewards (-1 to "
            "-4) were seen in random play (logs, per manual). Treasures: unverified."
        ),
        start=(
            "No FIRE needed; Harry responds from step 0 and the 20:00 clock starts "
            "counting down immediately. Walking LEFT from the start leads to another "
            "screen (x wraps); holding LEFT ~120 steps cost a life there."
        ),
        actions={
            "NOOP": "stand still",
            "FIRE": "jump (on the ground); no effect while on a ladder",
            "UP": "climb up a ladder (no effect on open ground)",
            "RIGHT": "run right (no effect while on a ladder)",
            "LEFT": "run left (no effect while on a ladder)",
            "DOWN": (
                "climb down a ladder (at the hole on the first screen: climbs down into the tunnel)"
            ),
            "UPRIGHT": "on the ground: run right; on a ladder: climb up",
            "UPLEFT": "on the ground: run left; on a ladder: climb up",
            "DOWNRIGHT": "on the ground: run right; on a ladder: climb down",
            "DOWNLEFT": "on the ground: run left; on a ladder: climb down",
            "UPFIRE": "on the ground: jump; on a ladder: climb up",
            "RIGHTFIRE": "running jump to the right",
            "LEFTFIRE": "running jump to the left",
            "DOWNFIRE": "on the ground: jump; on a ladder: climb down",
            "UPRIGHTFIRE": "on the ground: running jump right; on a ladder: climb up",
            "UPLEFTFIRE": "on the ground: running jump left; on a ladder: climb up",
            "DOWNRIGHTFIRE": "on the ground: running jump right; on a ladder: climb down",
            "DOWNLEFTFIRE": "on the ground: running jump left; on a ladder: climb down",
        },
        lives=3,
    ),
    "riverraid": Game(
        title="River Raid",
        summary=(
            "Fly a jet up a scrolling river, shooting enemy ships, helicopters, jets, "
            "fuel depots and bridges. Fly over fuel depots to refuel; crashing into the "
            "river bank or an enemy, or running out of fuel, costs a life."
        ),
        scoring=(
            "Observed rewards 30, 60, 80 and 500 (manual: tanker ship 30, helicopter 60, "
            "fuel depot 80, bridge 500; jet 100)."
        ),
        start=(
            "Nothing happens until you give an input: with NOOP only the game never "
            "starts. FIRE (or any joystick direction) launches the flight; it must be "
            "given again after every lost life."
        ),
        actions={
            "NOOP": "fly straight at normal speed",
            "FIRE": "shoot a missile straight ahead (up the screen)",
            "UP": "accelerate (fly faster)",
            "RIGHT": "bank right",
            "LEFT": "bank left",
            "DOWN": "slow down",
            "UPRIGHT": "faster + right",
            "UPLEFT": "faster + left",
            "DOWNRIGHT": "slower + right",
            "DOWNLEFT": "slower + left",
            "UPFIRE": "faster + shoot",
            "RIGHTFIRE": "right + shoot",
            "LEFTFIRE": "left + shoot",
            "DOWNFIRE": "slower + shoot",
            "UPRIGHTFIRE": "faster + right + shoot",
            "UPLEFTFIRE": "faster + left + shoot",
            "DOWNRIGHTFIRE": "slower + right + shoot",
            "DOWNLEFTFIRE": "slower + left + shoot",
        },
        lives=4,
        after_life_lost="press FIRE to fly on",
    ),
    "frostbite": Game(
        title="Frostbite",
        summary=(
            "Frostbite Bailey jumps across four rows of drifting ice floes; every jump "
            "onto white floes adds a block to the igloo on the shore. Complete the igloo "
            "and go inside before the temperature (counting down from 45) reaches 0."
        ),
        scoring="+10 per floe jump in level 1 (observed); igloo/temperature bonuses unverified.",
        start=(
            "No FIRE needed; Bailey stands on the shore (top) and responds from step 16. "
            "Doing nothing, a life is lost when the temperature runs out (~784 steps)."
        ),
        actions={
            "NOOP": "stand still (on a floe you drift with it)",
            "FIRE": (
                "reverse the drifting direction of the floe row you stand on (no effect "
                "on the shore)"
            ),
            "UP": "jump up to the next floe row / back to the shore",
            "RIGHT": "walk right",
            "LEFT": "walk left",
            "DOWN": "jump down to the next row of floes",
            "UPRIGHT": "jump up while moving right (on the shore: walk right)",
            "UPLEFT": "jump up while moving left (on the shore: walk left)",
            "DOWNRIGHT": "jump down while moving right",
            "DOWNLEFT": "jump down while moving left",
            "UPFIRE": "same as UP (jump up)",
            "RIGHTFIRE": "walk right (+ reverse floe when on one)",
            "LEFTFIRE": "walk left",
            "DOWNFIRE": "same as DOWN (jump down)",
            "UPRIGHTFIRE": "as UPRIGHT",
            "UPLEFTFIRE": "as UPLEFT",
            "DOWNRIGHTFIRE": "as DOWNRIGHT",
            "DOWNLEFTFIRE": "as DOWNLEFT",
        },
        lives=4,
    ),
    "kangaroo": Game(
        title="Kangaroo",
        summary=(
            "The mother kangaroo (bottom floor) must climb the ladders up the levels to "
            "rescue her joey at the top, punching monkeys and the apples they throw, and "
            "jumping or ducking to dodge apples."
        ),
        scoring="Observed: +200 once in short random play (source not identified); see unverified.",
        start=(
            "No FIRE needed; the kangaroo responds from step 40. Monkeys throw apples "
            "right away: with NOOP only the first life is lost at ~165 steps. After a "
            "lost life play resumes by itself."
        ),
        actions={
            "NOOP": "stand still",
            "FIRE": "punch (no movement)",
            "UP": "jump straight up",
            "RIGHT": "walk right",
            "LEFT": "walk left",
            "DOWN": "duck",
            "UPRIGHT": "jump up and to the right",
            "UPLEFT": "jump up and to the left",
            "DOWNRIGHT": "duck (no horizontal movement)",
            "DOWNLEFT": "duck (no horizontal movement)",
            "UPFIRE": "punch (no jump)",
            "RIGHTFIRE": "punch (no movement)",
            "LEFTFIRE": "punch without moving",
            "DOWNFIRE": "punch (no duck)",
            "UPRIGHTFIRE": "punch",
            "UPLEFTFIRE": "punch (as LEFTFIRE)",
            "DOWNRIGHTFIRE": "punch",
            "DOWNLEFTFIRE": "punch (as LEFTFIRE)",
        },
        lives=3,
    ),
}
